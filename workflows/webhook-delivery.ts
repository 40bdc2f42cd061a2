import { ActivityFailure, condition, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import { RETRY_SCHEDULE_MS } from '../core/webhooks/schedule';
import { redeliverSignal } from './definitions';
import type { WebhookDeliveryInput, WebhookDeliveryResult } from './definitions';

// One attempt is a 15 s POST and two short transactions. An internal failure (the database) is
// retried a few times; HTTP failures are outcomes, retried on the schedule below instead.
const webhooks = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 10 },
});

/** How long an attempt waits when its endpoint already has its share of attempts in flight. */
const DEFER_MS = 1_000;

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

  for (let failures = 0; ; ) {
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
      await sleep(DEFER_MS);
      continue;
    }
    if (result.outcome !== 'retry' || retryInMs === null) return { deliveryId: input.deliveryId, outcome: result.outcome };
    redeliverRequested = false;
    await condition(() => redeliverRequested, retryInMs);
    failures++;
  }
}
