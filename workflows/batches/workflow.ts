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
import type { WorkflowInfo } from '@temporalio/workflow';
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

/** What one run of a batch keeps between its steps; everything else it knows is in PostgreSQL. */
interface BatchRun {
  input: BatchWorkflowInput;
  info: WorkflowInfo;
  /** A line ended, a cancel came or the window closed since the batch last looked. */
  woken: boolean;
  cancelled: boolean;
  expired: boolean;
  /** The completion window's timer: cancelled when the run ends, so that no timer outlives it. */
  window: CancellationScope;
  /** This run's steps so far: each advance claims the batch under its own number. */
  counter: number;
  /** Lines started by this batch, its earlier runs included. */
  started: number;
  /** What the search attributes say now, so that an unchanged value is not upserted again. */
  shown: { status?: string; completed?: number; failed?: number };
}

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
  const run: BatchRun = {
    input,
    info: workflowInfo(),
    woken: false,
    cancelled: false,
    expired: false,
    window: new CancellationScope(),
    counter: 0,
    started: input.startedBefore ?? 0,
    shown: {},
  };
  listen(run);
  startWindow(run);
  try {
    return await advance(run);
  } catch (err) {
    // Cancelled from the Temporal UI or CLI: the batch is cancelled as its API's cancel would
    // (lines not started released, lines in flight cancelled), not left for a restart to resume.
    if (!isCancellation(err) || !patched('operator-cancel-stops-batch')) throw err;
    run.cancelled = true;
    return await CancellationScope.nonCancellable(() => stop(run, 'cancelled'));
  }
};

/** A line that ended wakes the batch; a cancel wakes it too, to stop. */
function listen(run: BatchRun): void {
  setHandler(batchWakeSignal, () => void (run.woken = true));
  setHandler(batchCancelSignal, () => {
    run.cancelled = true;
    run.woken = true;
  });
}

/** The completion window: one timer per run, for what is left of it; its end wakes the batch to stop. */
function startWindow(run: BatchRun): void {
  const left = run.input.expiresAtMs - run.info.runStartTime.getTime();
  if (left <= 0) run.expired = true;
  else
    run.window
      .run(() => sleep(left))
      .then(
        () => {
          run.expired = true;
          run.woken = true;
        },
        () => undefined,
      );
}

/**
 * Advances the batch until it ends: each look starts the lines there is room for, shows its
 * progress, finishes it once no line waits or runs, and continues as new before the history grows
 * large; a cancel or the window's end turns it to stopping.
 */
async function advance(run: BatchRun): Promise<BatchResult> {
  const { input, info } = run;
  for (;;) {
    run.woken = false;
    if (run.cancelled) return stop(run, 'cancelled');
    if (run.expired) return stop(run, 'expired');
    const withCounts = run.counter % COUNTS_EVERY === 0;
    const s: BatchStep = await step(() =>
      steps.advanceBatch({
        batchId: input.batchId,
        claim: `${info.runId}:${run.counter}`,
        taskQueue: info.taskQueue,
        kind: input.kind,
        withCounts,
      }),
    );
    run.counter++;
    run.started += s.started;
    if (s.status === 'cancelling' || s.stopping === 'cancelled') return stop(run, 'cancelled');
    if (s.expired || s.stopping === 'expired') return stop(run, 'expired');
    if (s.status !== 'in_progress') {
      // Ended by an earlier run: say so in the attributes, with the counts it ended with.
      show(run, s.status, s.counts);
      return { batchId: input.batchId, status: s.status as BatchResult['status'] };
    }
    show(run, 'in_progress', s.counts);
    setCurrentDetails(`${run.started} lines started, ${s.inFlight} in flight, ${s.waiting} waiting`);
    if (s.waiting === 0 && s.inFlight === 0) {
      const done = await finish(run);
      if (done) return done;
    }
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      run.window.cancel();
      return continueAsNew<BatchWorkflow>({ ...input, startedBefore: run.started });
    }
    // Lines just started fill the room; the next ones start when one ends (a wake) or at the next look.
    if (!run.woken) await nap(run, POLL_MS);
  }
}

/** Stops the batch (cancelled, or its window ended): asks its lines to stop, again now and then, until it ends. */
async function stop(run: BatchRun, outcome: 'cancelled' | 'expired'): Promise<BatchResult> {
  for (let round = 0; ; round++) {
    run.woken = false;
    if (round % STOP_RETRY_EVERY === 0) {
      const s = await step(() =>
        steps.stopBatchLines({ batchId: run.input.batchId, outcome, taskQueue: run.info.taskQueue }),
      );
      setCurrentDetails(`stopping (${outcome}): ${s.inFlight} lines in flight were cancelled`);
      show(run, outcome === 'cancelled' ? 'cancelling' : 'in_progress');
    }
    const done = await finish(run);
    if (done) return done;
    await nap(run, POLL_MS / 5);
  }
}

/** Ends the batch once no line runs any more; undefined while some still do. */
async function finish(run: BatchRun): Promise<BatchResult | undefined> {
  const f = await step(() => steps.finishBatch(run.input.batchId));
  if (f.outcome === 'running') return undefined;
  show(run, f.status, f.counts);
  run.window.cancel();
  return { batchId: run.input.batchId, status: f.status as BatchResult['status'] };
}

/** Runs a step; one that keeps failing past its schedule-to-close waits and is tried again. */
async function step<T>(attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
      setCurrentDetails(`a step keeps failing (${err.cause?.message ?? err.message}); trying again`);
      await sleep(STEP_PAUSE_MS);
    }
  }
}

/** Shows the batch's status (and its counts, when read) in its search attributes, when they changed. */
function show(run: BatchRun, status: string, counts?: { completed: number; failed: number }): void {
  const { shown } = run;
  const next = { status, completed: counts?.completed ?? shown.completed, failed: counts?.failed ?? shown.failed };
  if (next.status === shown.status && next.completed === shown.completed && next.failed === shown.failed) return;
  run.shown = next;
  upsertSearchAttributes([
    { key: BatchStatus, value: status },
    ...(counts
      ? [
          { key: BatchCompleted, value: counts.completed },
          { key: BatchFailed, value: counts.failed },
        ]
      : []),
  ]);
}

/** Waits for a wake (a line ended, a cancel, the window's end) or the next look. */
async function nap(run: BatchRun, ms: number): Promise<void> {
  await condition(() => run.woken, ms);
  run.woken = false;
}

// A batch may run for its whole completion window: under Worker Versioning it moves to the current
// version at its next task rather than holding an old one for a day (its state is in PostgreSQL and
// each run's history is short; changes to this code use patched() like every workflow change).
// An unversioned worker (no build id) takes no versioning behavior at all.
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}),
  batch,
);
