import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { batchGenerations, countsOfBatch } from '../../core/db/batches';
import type { BatchCounts } from '../../core/db/batches';
import type { GenerationRow } from '../../core/db/generations';
import { inputOfRecord } from '../../core/generation/workflow-input';
import type { Deadlines } from '../../core/generation/workflow-input';
import { generationStartOptions } from '../../core/generation/workflow-start';
import { admitBatchLines, finishBatch, stopBatch } from '../../core/ledger';
import type { LineLimits, Resolution } from '../../core/ledger';
import type { BatchStatus } from '../../core/vocabulary';
import { batchWakeSignal, cancelSignal, GENERATION_WORKFLOW_TYPE } from '../../core/workflow-contract';
import type { GenerationWorkflow } from '../../core/workflow-contract';

export interface BatchLineLimits {
  /** Lines (generations) of one batch in flight at once. */
  perBatch: number;
  /** Lines of all of one account's batches in flight at once. */
  perAccount: number;
}

export interface BatchActivityDeps {
  pool: pg.Pool;
  client: Client;
  deadlines: Deadlines;
  limits: BatchLineLimits;
  /** A video batch never has more lines in flight than the account has video slots (they would only queue there). */
  videoConcurrency: number;
}

/** What one step of a batch's workflow found, and did. */
export interface BatchStep {
  status: BatchStatus;
  stopping: 'cancelled' | 'expired' | null;
  /** The batch's completion window has passed. */
  expired: boolean;
  /** Lines this step started. */
  started: number;
  waiting: number;
  inFlight: number;
  /** When asked for (the workflow shows them in its search attributes now and then). */
  counts?: BatchCounts;
}

/**
 * The steps of a batch's workflow (workflows/batches/workflow.ts). Each is idempotent: a step that
 * is run again after a crash starts, stops or finishes nothing twice (the ledger's transactions
 * decide, core/ledger/batches.ts); starting a generation's workflow again joins the one running.
 */
export function createBatchActivities(deps: BatchActivityDeps) {
  const { pool, client } = deps;

  const start = async (g: GenerationRow, taskQueue: string): Promise<void> => {
    try {
      await client.workflow.start<GenerationWorkflow>(
        GENERATION_WORKFLOW_TYPE,
        generationStartOptions(inputOfRecord(g, deps.deadlines), taskQueue, g.batchId ?? undefined),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  };

  return {
    /**
     * Starts the batch's next lines as far as its limits allow (`claim` names this step, so a
     * repeat starts the same generations, never new ones) and says where the batch stands.
     */
    async advanceBatch(req: {
      batchId: string;
      claim: string;
      taskQueue: string;
      kind: 'image' | 'video' | 'chat' | 'upscale';
      withCounts: boolean;
    }): Promise<BatchStep> {
      const limits: LineLimits =
        req.kind === 'video'
          ? { perBatch: Math.min(deps.limits.perBatch, deps.videoConcurrency), perAccount: deps.limits.perAccount }
          : deps.limits;
      const admitted = await admitBatchLines(pool, { batchId: req.batchId, claim: req.claim, limits });
      await Promise.all(admitted.generations.map((g) => start(g, req.taskQueue)));
      return {
        status: admitted.status,
        stopping: admitted.stopping,
        expired: admitted.expired,
        started: admitted.generations.length,
        waiting: admitted.waiting,
        inFlight: admitted.inFlight,
        // A batch that has ended (its finish committed in a workflow task that then failed, or by
        // an earlier run) always comes with its counts: they are the last its attributes show.
        ...(req.withCounts || admitted.status !== 'in_progress'
          ? { counts: await countsOfBatch(pool, req.batchId) }
          : {}),
      };
    },

    /**
     * Stops the batch (cancelled or expired): the lines that never started are marked so and what
     * the batch held for them is released; each line still in flight is cancelled like a cancelled
     * generation (signal-with-start, so one whose start was lost starts only to release). Answers
     * how many are still in flight; repeatable.
     */
    async stopBatchLines(req: {
      batchId: string;
      outcome: 'cancelled' | 'expired';
      taskQueue: string;
    }): Promise<{ inFlight: number }> {
      const stop = await stopBatch(pool, { batchId: req.batchId, outcome: req.outcome });
      if (stop.outcome === 'already') return { inFlight: 0 };
      const reason = stop.stopping === 'cancelled' ? 'the batch was cancelled' : 'the batch expired';
      const live = await batchGenerations(pool, req.batchId, stop.live);
      await Promise.all(
        live.map(async (g) => {
          try {
            await client.workflow.signalWithStart<GenerationWorkflow, [string]>(GENERATION_WORKFLOW_TYPE, {
              ...generationStartOptions(inputOfRecord(g, deps.deadlines), req.taskQueue, req.batchId),
              signal: cancelSignal,
              signalArgs: [reason],
            });
          } catch (err) {
            // Closed meanwhile: it has settled or released by itself.
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          }
        }),
      );
      return { inFlight: live.length };
    },

    /** Ends the batch if every line has ended; otherwise says how many are left. */
    async finishBatch(
      batchId: string,
    ): Promise<
      | { outcome: 'finished' | 'already'; status: BatchStatus; counts?: BatchCounts }
      | { outcome: 'running'; waiting: number; inFlight: number }
    > {
      const f = await finishBatch(pool, batchId);
      if (f.outcome === 'running') return f;
      return { outcome: f.outcome, status: f.batch.status, counts: f.counts };
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;

/**
 * Wakes a batch's workflow when one of its lines has ended (called after the ledger's commit), so
 * that it starts the next line at once rather than at its next look. Best effort: a wake that is
 * lost only waits for that look.
 */
export function createBatchWaker(client: Client) {
  return async (resolution: { outcome: string; batchId?: string }): Promise<void> => {
    if (!resolution.batchId || resolution.outcome === 'already') return;
    await client.workflow
      .getHandle(resolution.batchId)
      .signal(batchWakeSignal)
      .catch(() => undefined);
  };
}
export type BatchWaker = ReturnType<typeof createBatchWaker>;

/**
 * Stops the choices of a batch line still running once one of them has failed (called after the
 * ledger's commit): the line is charged nothing, so their upstream calls stop as a reply's do, and
 * each is released when its workflow ends. Best effort: a choice this misses runs to its end and is
 * released then.
 */
export function createChoiceStopper(client: Client) {
  return async (resolution: Resolution): Promise<void> => {
    if (resolution.outcome !== 'released' || !resolution.stopChoices) return;
    await Promise.all(
      resolution.stopChoices.map((id) =>
        client.workflow
          .getHandle(id)
          .signal(cancelSignal, 'another choice of its batch line failed')
          .catch(() => undefined),
      ),
    );
  };
}
export type ChoiceStopper = ReturnType<typeof createChoiceStopper>;
