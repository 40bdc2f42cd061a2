import {
  ActivityFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities, BatchStep } from '../../activities/batches/lines';
import { BatchCompleted, BatchFailed, BatchStatus } from '../../core/search-attributes';
import { batchCancelSignal, batchWakeSignal } from '../../core/workflow-contract';
import type { BatchResult, BatchWorkflow, BatchWorkflowInput } from '../../core/workflow-contract';

// The batch's steps are short transactions and Temporal starts/signals: local activities, run
// inside the workflow task. Each is idempotent (activities/batches/lines.ts), so a retry is safe;
// one that keeps failing (PostgreSQL or Temporal down) is tried again after a pause, not given up.
const steps = proxyLocalActivities<BatchActivities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '5 minutes',
  retry: { initialInterval: '500 ms', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** With no wake, the batch looks again this often (a wake lost, a line released by the reconciler). */
const POLL_MS = 5_000;
/** While stopping, the lines still in flight are asked again this often (a cancel that was lost). */
const STOP_RETRY_EVERY = 6;
/** The counts in the search attributes are read at most once per this many steps (and at the end). */
const COUNTS_EVERY = 10;
/** A run's history stays well below Temporal's limits: past this many events the batch continues as new. */
const MAX_HISTORY_EVENTS = 10_000;
/** A step that failed for longer than its schedule-to-close is tried again after this pause. */
const STEP_PAUSE_MS = 10_000;

/**
 * One batch, from its hold to its end (docs/decisions/0072-batch-orchestration.md). Its lines run as
 * generation workflows that it starts (activities/batches/lines.ts), a bounded number at a time per
 * batch and per account; each line that ends wakes it (the ledger's settle or release signals) and
 * it starts the next. Everything it knows is in PostgreSQL, so it survives worker restarts, continues
 * as new before its history grows large, and a new run (the reconciler's, after a termination)
 * carries on where the last stopped. A cancel (signal, or `cancelling` in the database) or the end
 * of the completion window stops it: lines not started never run and what they held is released;
 * lines in flight are cancelled like any generation, their holds released; then it ends.
 */
export const batch: BatchWorkflow = async (input: BatchWorkflowInput): Promise<BatchResult> => {
  const info = workflowInfo();
  let woken = false;
  let cancelled = false;
  setHandler(batchWakeSignal, () => void (woken = true));
  setHandler(batchCancelSignal, () => {
    cancelled = true;
    woken = true;
  });

  // The completion window: one timer per run, for what is left of it.
  let expired = false;
  const window = new CancellationScope();
  const left = input.expiresAtMs - info.runStartTime.getTime();
  if (left <= 0) expired = true;
  else
    window
      .run(() => sleep(left))
      .then(
        () => {
          expired = true;
          woken = true;
        },
        () => undefined,
      );

  let counter = 0;
  let started = input.startedBefore ?? 0;
  let shown: { status?: string; completed?: number; failed?: number } = {};

  /** Runs a step; one that keeps failing past its schedule-to-close waits and is tried again. */
  const step = async <T>(run: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        return await run();
      } catch (err) {
        if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
        setCurrentDetails(`a step keeps failing (${err.cause?.message ?? err.message}); trying again`);
        await sleep(STEP_PAUSE_MS);
      }
    }
  };

  const show = (status: string, counts?: { completed: number; failed: number }): void => {
    const next = { status, completed: counts?.completed ?? shown.completed, failed: counts?.failed ?? shown.failed };
    if (next.status === shown.status && next.completed === shown.completed && next.failed === shown.failed) return;
    shown = next;
    upsertSearchAttributes([
      { key: BatchStatus, value: status },
      ...(counts
        ? [
            { key: BatchCompleted, value: counts.completed },
            { key: BatchFailed, value: counts.failed },
          ]
        : []),
    ]);
  };

  /** Waits for a wake (a line ended, a cancel, the window's end) or the next look. */
  const nap = async (ms: number): Promise<void> => {
    await condition(() => woken, ms);
    woken = false;
  };

  const finish = async (): Promise<BatchResult | undefined> => {
    const f = await step(() => steps.finishBatch(input.batchId));
    if (f.outcome === 'running') return undefined;
    show(f.status, f.counts);
    window.cancel();
    return { batchId: input.batchId, status: f.status as BatchResult['status'] };
  };

  const stop = async (outcome: 'cancelled' | 'expired'): Promise<BatchResult> => {
    for (let round = 0; ; round++) {
      woken = false;
      if (round % STOP_RETRY_EVERY === 0) {
        const s = await step(() =>
          steps.stopBatchLines({ batchId: input.batchId, outcome, taskQueue: info.taskQueue }),
        );
        setCurrentDetails(`stopping (${outcome}): ${s.inFlight} lines in flight were cancelled`);
        show(outcome === 'cancelled' ? 'cancelling' : 'in_progress');
      }
      const done = await finish();
      if (done) return done;
      await nap(POLL_MS / 5);
    }
  };

  const run = async (): Promise<BatchResult> => {
    for (;;) {
      woken = false;
      if (cancelled) return stop('cancelled');
      if (expired) return stop('expired');
      const withCounts = counter % COUNTS_EVERY === 0;
      const s: BatchStep = await step(() =>
        steps.advanceBatch({
          batchId: input.batchId,
          claim: `${info.runId}:${counter}`,
          taskQueue: info.taskQueue,
          kind: input.kind,
          withCounts,
        }),
      );
      counter++;
      started += s.started;
      if (s.status === 'cancelling' || s.stopping === 'cancelled') return stop('cancelled');
      if (s.expired || s.stopping === 'expired') return stop('expired');
      if (s.status !== 'in_progress') {
        // Ended by an earlier run: say so in the attributes, with the counts it ended with.
        show(s.status, s.counts);
        return { batchId: input.batchId, status: s.status as BatchResult['status'] };
      }
      show('in_progress', s.counts);
      setCurrentDetails(`${started} lines started, ${s.inFlight} in flight, ${s.waiting} waiting`);
      if (s.waiting === 0 && s.inFlight === 0) {
        const done = await finish();
        if (done) return done;
      }
      if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
        window.cancel();
        return continueAsNew<BatchWorkflow>({ ...input, startedBefore: started });
      }
      // Lines just started fill the room; the next ones start when one ends (a wake) or at the next look.
      if (!woken) await nap(POLL_MS);
    }
  };

  try {
    return await run();
  } catch (err) {
    // Cancelled from the Temporal UI or CLI: the batch is cancelled as its API's cancel would
    // (lines not started released, lines in flight cancelled), not left for a restart to resume.
    if (!isCancellation(err) || !patched('operator-cancel-stops-batch')) throw err;
    cancelled = true;
    return await CancellationScope.nonCancellable(() => stop('cancelled'));
  }
};

// A batch may run for its whole completion window: under Worker Versioning it moves to the current
// version at its next task rather than holding an old one for a day (its state is in PostgreSQL and
// each run's history is short; changes to this code use patched() like every workflow change).
// An unversioned worker (no build id) takes no versioning behavior at all.
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}),
  batch,
);
