import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Client, WorkflowStartOptions } from '@temporalio/client';
import { ServiceUnavailableError } from '../../core/errors';
import { redeliverSignal, WEBHOOK_DELIVERY_WORKFLOW_TYPE } from '../../core/workflow-contract';
import type { WebhookDeliveryWorkflow } from '../../core/workflow-contract';

export interface WebhookDispatcherOptions {
  client: Client;
  /** The webhook task queue: deliveries never share a queue (or a worker's slots) with generations. */
  taskQueue: string;
  /** A compressed schedule for tests; the production one when absent. */
  retryScheduleMs?: readonly number[] | undefined;
}

const START_DEADLINE_MS = 5_000;

/** Starts delivery workflows: one per delivery, its workflow id the delivery id. */
export function createWebhookDispatcher({ client, taskQueue, retryScheduleMs }: WebhookDispatcherOptions) {
  const options = (deliveryId: string): WorkflowStartOptions<WebhookDeliveryWorkflow> => ({
    workflowId: deliveryId,
    taskQueue,
    args: [{ deliveryId, ...(retryScheduleMs ? { retryScheduleMs: [...retryScheduleMs] } : {}) }],
    staticSummary: `webhook delivery ${deliveryId}`,
  });
  return {
    /**
     * Starts the delivery's workflow exactly once: a start repeated by a relay that died before it
     * marked the row (or by a second relay) finds the workflow, running or closed, and is refused.
     */
    async dispatch(deliveryId: string): Promise<void> {
      try {
        await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
          client.workflow.start<WebhookDeliveryWorkflow>(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
            ...options(deliveryId),
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
          }),
        );
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
    },

    /** Sends now: a waiting delivery stops waiting; a finished one gets a new run with the same id. */
    async redeliver(deliveryId: string): Promise<void> {
      try {
        await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
          client.workflow.signalWithStart<WebhookDeliveryWorkflow, []>(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
            ...options(deliveryId),
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
            signal: redeliverSignal,
            signalArgs: [],
          }),
        );
      } catch (err) {
        throw new ServiceUnavailableError('The redelivery could not reach the workflow service; retry shortly.', {
          cause: err,
        });
      }
    },
  };
}

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>;
