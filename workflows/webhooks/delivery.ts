import { ActivityFailure, condition, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../../activities/webhooks/delivery';
import { RETRY_SCHEDULE_MS } from '../../core/webhooks/schedule';
import { redeliverSignal } from '../../core/workflow-contract';
import type { WebhookDeliveryInput, WebhookDeliveryResult } from '../../core/workflow-contract';

// One attempt is a 15 s POST and two short transactions, run as a local activity: on the worker
// that runs the workflow task, recorded with its completion, which halves the Temporal server's
// work per delivery (docs/decisions/0052-webhook-delivery-workflow.md has the numbers). An internal failure (the database) is
// retried a few times; HTTP failures are outcomes, retried on the schedule below instead.
const webhooks = proxyLocalActivities<WebhookActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 10 },
});

/**
 * How long an attempt waits when its endpoint already has its share of attempts in flight: 1 s,
 * doubling up to 15 s (an attempt's own time limit), so a backlog for a slow receiver waits
 * quietly instead of polling.
 */
const deferMs = (times: number): number => Math.min(15_000, 1_000 * 2 ** times);

/**
 * One delivery (one event for one endpoint), sent until a receiver says 2xx: at once, then after
 * each failure on the retry schedule (DESIGN §6, about 3 days). The waits are durable timers, so a
 * worker restart changes nothing. The `redeliver` signal cuts a wait short; a redelivery of a
 * finished delivery starts a new run with the same id. The workflow id is the delivery id.
 */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const schedule = input.retryScheduleMs ?? RETRY_SCHEDULE_MS;
  let redeliverRequested = false;
  setHandler(redeliverSignal, () => {
    redeliverRequested = true;
  });

  let deferrals = 0;
  for (let failures = 0; ;) {
    const retryInMs = failures < schedule.length ? (schedule[failures] ?? null) : null;
    let result;
    try {
      result = await webhooks.attemptWebhookDelivery({ deliveryId: input.deliveryId, retryInMs });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The attempt itself could not run (e.g. the database was down throughout): count it as failed.
      result = { outcome: retryInMs === null ? 'failed' : 'retry' } as const;
    }
    if (result.outcome === 'deferred') {
      await sleep(deferMs(deferrals++));
      continue;
    }
    deferrals = 0;
    if (result.outcome !== 'retry' || retryInMs === null)
      return { deliveryId: input.deliveryId, outcome: result.outcome };
    redeliverRequested = false;
    await condition(() => redeliverRequested, retryInMs);
    failures++;
  }
}
