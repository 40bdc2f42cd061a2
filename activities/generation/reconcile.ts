import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { batchStartOptions } from '../../core/batches/workflow-start';
import { findLiveBatches } from '../../core/db/batches';
import { findLingeringHolds } from '../../core/db/reconcile';
import { release, requestBatchCancel } from '../../core/ledger';
import { BATCH_WORKFLOW_TYPE, cancelSignal } from '../../core/workflow-contract';
import type { BatchWorkflow } from '../../core/workflow-contract';
import type { BatchWaker, ChoiceStopper } from '../batches/lines';
import type { GenerationKind } from '../../core/vocabulary';
import { closedWorkflowReason } from './closed-workflows';
import type { VideoSlotWaker } from './slots';

export interface ReconcileDeps {
  pool: pg.Pool;
  client: Client;
  /** Per kind: a generation still running this long after its hold is overdue even for its deadline. */
  deadlines: Record<GenerationKind, number>;
  /** A released video frees its slot (or its place in the queue) for the account's next one. */
  wakeVideoWaiters: VideoSlotWaker;
  /** A released line of a batch wakes its batch's workflow. */
  wakeBatch: BatchWaker;
  /** A released choice of a batch line stops the others still running. */
  stopChoices: ChoiceStopper;
}

export interface ReconcileRequest {
  /** Only holds at least this old: younger ones may belong to an admission still starting its workflow. */
  graceMs: number;
  limit?: number;
}

export interface ReconcileReport {
  checked: number;
  /** Holds released because their workflow never started, or closed without settling or releasing. */
  released: { generationId: string; reason: string }[];
  /** Running workflows past their deadline by far, asked to cancel (their machine releases). */
  cancelled: string[];
  /** Holds left alone this time, with why (e.g. Temporal unreachable). */
  skipped: { generationId: string; reason: string }[];
  /** Batches still running whose workflow was gone, started again (they carry on from PostgreSQL). */
  batchesResumed: string[];
}

/** Past its deadline by this much, a running generation's own timer has evidently not fired. */
const OVERDUE_MARGIN_MS = 10 * 60_000;

/**
 * The safety net of "every hold ends settled or released exactly once" (DESIGN §5): a hold whose
 * workflow never started (its API died after the hold transaction), was terminated from the
 * Temporal UI, timed out or failed without releasing is released here, in the same idempotent
 * transaction the workflow would have used; a hold only moves from `held` once, so a workflow
 * that does finish later finds it released and charges nothing.
 */
export function createReconcileActivities({
  pool,
  client,
  deadlines,
  wakeVideoWaiters,
  wakeBatch,
  stopChoices,
}: ReconcileDeps) {
  /** A batch in progress whose workflow is not running: its workflow starts again. */
  const resumeBatches = async (graceMs: number, report: ReconcileReport): Promise<void> => {
    const taskQueue = Context.current().info.taskQueue;
    for (const b of await findLiveBatches(pool, graceMs, 100)) {
      let status: string | undefined;
      try {
        status = (await client.workflow.getHandle(b.id).describe()).status.name;
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) continue;
      }
      if (status === 'RUNNING') continue;
      // An operator cancelled it (a worker of the code before batches stopped themselves on a
      // cancel): the batch is cancelled, and the new run stops its lines instead of resuming them.
      // A terminated one carries on: terminating restarts a batch, cancelling stops it.
      if (status === 'CANCELLED') await requestBatchCancel(pool, b.accountId, b.id);
      const input = {
        batchId: b.id,
        accountId: b.accountId,
        kind: b.kind,
        expiresAtMs: b.expiresAt?.getTime() ?? Date.now(),
      };
      await client.workflow.start<BatchWorkflow>(
        BATCH_WORKFLOW_TYPE,
        batchStartOptions({ ...input, endpoint: b.endpoint, total: b.total }, taskQueue),
      );
      report.batchesResumed.push(b.id);
    }
  };

  return {
    async reconcileHolds(req: ReconcileRequest): Promise<ReconcileReport> {
      const holds = await findLingeringHolds(pool, req.graceMs, req.limit ?? 500);
      const report: ReconcileReport = {
        checked: holds.length,
        released: [],
        cancelled: [],
        skipped: [],
        batchesResumed: [],
      };
      for (const hold of holds) {
        const id = hold.generationId;
        let status: string | undefined;
        try {
          status = (await client.workflow.getHandle(id).describe()).status.name;
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) {
            report.skipped.push({ generationId: id, reason: `Temporal did not answer: ${(err as Error).message}` });
            continue;
          }
        }
        if (status === 'RUNNING') {
          if (hold.heldForMs > deadlines[hold.kind] + OVERDUE_MARGIN_MS) {
            await client.workflow.getHandle(id).signal(cancelSignal, 'overdue: released by the reconciler');
            report.cancelled.push(id);
          }
          continue;
        }
        // A chat the API runs starts its workflow at its end: none by the hold's deadline means the
        // API stopped mid-reply.
        const reason =
          status === undefined ? (hold.pastDeadline ? 'timeout' : 'not_started') : closedWorkflowReason(status);
        const message =
          status !== undefined
            ? `The workflow of this generation ended (${status.toLowerCase()}) without settling; the reconciler released the hold.`
            : hold.pastDeadline
              ? 'The reply was not recorded by its deadline (the API stopped mid-reply); the reconciler released the hold.'
              : 'The workflow of this generation never started; the reconciler released the hold.';
        const outcome = await release(pool, id, { code: reason, message, retryable: true });
        await wakeVideoWaiters(id, outcome);
        await stopChoices(outcome);
        await wakeBatch(outcome);
        if (outcome.outcome === 'released') report.released.push({ generationId: id, reason });
      }
      await resumeBatches(req.graceMs, report);
      return report;
    },
  };
}
