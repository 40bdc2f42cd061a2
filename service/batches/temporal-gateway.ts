import type { Client } from '@temporalio/client';
import { batchStartOptions } from '../../core/batches/workflow-start';
import type { BatchRow } from '../../core/db/batches';
import { BATCH_WORKFLOW_TYPE, batchCancelSignal } from '../../core/workflow-contract';
import type { BatchWorkflow, BatchWorkflowInput } from '../../core/workflow-contract';

/** A start or a signal normally takes milliseconds; past this the caller hears 503. */
const DEADLINE_MS = 5_000;

/** How the service talks to Temporal about batches: start one's workflow, tell it to stop. */
export function createBatchGateway({ client, taskQueue }: { client: Client; taskQueue: string }) {
  const optionsOf = (b: BatchRow) => {
    const input: BatchWorkflowInput = {
      batchId: b.id,
      accountId: b.accountId,
      kind: b.kind,
      expiresAtMs: (b.expiresAt ?? b.createdAt).getTime(),
    };
    return batchStartOptions({ ...input, endpoint: b.endpoint, total: b.total }, taskQueue);
  };

  return {
    /** Starts a held batch's workflow; one already running is left as it is. */
    async start(b: BatchRow): Promise<void> {
      await client.withDeadline(Date.now() + DEADLINE_MS, () =>
        client.workflow.start<BatchWorkflow>(BATCH_WORKFLOW_TYPE, optionsOf(b)),
      );
    },

    /**
     * Tells a batch's workflow to stop now (starting it first if it is gone: it then stops at once).
     * The database already says `cancelling`, which the workflow also reads at its next look.
     */
    async cancel(b: BatchRow, reason: string): Promise<void> {
      await client.withDeadline(Date.now() + DEADLINE_MS, () =>
        client.workflow.signalWithStart<BatchWorkflow, [string]>(BATCH_WORKFLOW_TYPE, {
          ...optionsOf(b),
          signal: batchCancelSignal,
          signalArgs: [reason],
        }),
      );
    },
  };
}

export type BatchGateway = ReturnType<typeof createBatchGateway>;
