import type { WorkflowStartOptions } from '@temporalio/client';
import { AccountId, BatchCompleted, BatchFailed, BatchId, BatchLines, BatchStatus } from '../search-attributes';
import type { BatchWorkflow, BatchWorkflowInput } from '../workflow-contract';

/**
 * How a batch's workflow is started: by the API once the batch is held, or again by the reconciler
 * for a running batch whose workflow is gone (terminated from the UI): its state is in PostgreSQL,
 * so a new run carries on where the last one stopped. The batch id is the workflow id.
 */
export function batchStartOptions(
  input: BatchWorkflowInput & { endpoint: string; total: number },
  taskQueue: string,
): WorkflowStartOptions<BatchWorkflow> {
  const { endpoint, total, ...args } = input;
  return {
    workflowId: input.batchId,
    taskQueue,
    args: [args],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // A closed run of a batch still in progress is started again (never two at once).
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: [
      { key: AccountId, value: input.accountId },
      { key: BatchId, value: input.batchId },
      { key: BatchStatus, value: 'in_progress' },
      { key: BatchLines, value: total },
      { key: BatchCompleted, value: 0 },
      { key: BatchFailed, value: 0 },
    ],
    staticSummary: `batch · ${endpoint} · ${total} ${total === 1 ? 'line' : 'lines'}`,
    priority: { fairnessKey: input.accountId },
  };
}
