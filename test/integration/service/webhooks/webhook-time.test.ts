/**
 * Webhook behaviour over time, without waiting for it: the clock of the API and the webhook
 * worker is injectable (rotation overlap, 3 days of failures), and the retry schedule is
 * compressed, except in the last test, which proves the production schedule is the one a
 * delivery workflow really waits on.
 */
import { createHmac } from 'node:crypto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { AttemptRequest } from '../../../../activities/webhooks/delivery';
import { RETRY_SCHEDULE_MS } from '../../../../core/webhooks/schedule';
import { createWebhookDispatcher } from '../../../../service/webhooks/dispatch';
import { redeliverSignal } from '../../../../core/workflow-contract';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startReceiver } from '../../../support/webhook-receiver';
import type { Received, TestReceiver } from '../../../support/webhook-receiver';

const HOUR = 3600_000;
let offset = 0;
const clock = () => Date.now() + offset;

let h: Harness;
let r: TestReceiver;
beforeAll(async () => {
  h = await startHarness({ webhooks: { retryScheduleMs: [100, 100, 100, 100, 100, 100, 100, 100, 100], clock } });
  r = await startReceiver();
});
afterAll(async () => {
  await r?.close();
  await h?.close();
});

const WH = '/api/v1/webhooks';

function v1s(got: Received): { t: string; v1: string[] } {
  const parts = String(got.headers['x-service-signature']).split(',');
  return { t: parts[0]!.slice(2), v1: parts.slice(1).map((p) => p.slice(3)) };
}
const hmac = (secret: string, t: string, body: string) =>
  createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');

async function ping(key: string, id: string): Promise<Received> {
  const before = r.received.length;
  const res = await h.call('POST', `${WH}/${id}/test`, { key });
  expect(res.statusCode).toBe(202);
  const deliveryId = res.json<{ id: string }>().id;
  const [got] = await r.until(1, (x) => x.headers['x-service-delivery'] === deliveryId);
  expect(r.received.length).toBeGreaterThan(before);
  return got!;
}

describe('secret rotation', () => {
  it('signs with both secrets for 24 hours, then with the new one only', async () => {
    r.behave(() => 200);
    const { key } = await h.account({ credits: 1 });
    const created = (await h.call('POST', WH, { key, body: { url: r.url } })).json<{ id: string; secret: string }>();
    const rotated = (await h.call('POST', `${WH}/${created.id}/rotate-secret`, { key })).json<{
      secret: string;
      previousSecretExpiresAt: string;
    }>();

    offset = 23 * HOUR;
    const during = await ping(key, created.id);
    const { t, v1 } = v1s(during);
    expect(Number(t) * 1000).toBeGreaterThan(Date.now() + 22 * HOUR);
    expect(v1).toEqual([hmac(rotated.secret, t, during.body), hmac(created.secret, t, during.body)]);

    offset = 25 * HOUR;
    const after = await ping(key, created.id);
    const late = v1s(after);
    expect(late.v1).toEqual([hmac(rotated.secret, late.t, after.body)]);
    expect(late.v1).not.toContain(hmac(created.secret, late.t, after.body));
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect((await h.call('GET', `${WH}/${created.id}`, { key })).json()).toMatchObject({
      previousSecretExpiresAt: null,
    });
    offset = 0;
  });
});

describe('failing endpoints', () => {
  it('a delivery that fails every attempt ends failed after the schedule, ten attempts in its log', async () => {
    const down = await startReceiver();
    down.behave(() => 503);
    try {
      const { key } = await h.account({ credits: 1 });
      const e = (await h.call('POST', WH, { key, body: { url: down.url } })).json<{ id: string }>();
      await h.call('POST', `${WH}/${e.id}/test`, { key });
      const d = await eventually(async () => {
        const [x] = (await h.call('GET', `${WH}/${e.id}/deliveries`, { key })).json<{
          data: { status: string; attempts: { statusCode: number; nextRetryAt: string | null }[] }[];
        }>().data;
        return x?.status === 'failed' ? x : undefined;
      });
      expect(d.attempts).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
      expect(d.attempts.every((a) => a.statusCode === 503)).toBe(true);
      expect(d.attempts.at(-1)!.nextRetryAt).toBeNull();
      expect(down.received).toHaveLength(10);
      // Well under 3 days of (injected) time: the endpoint stays enabled.
      expect((await h.call('GET', `${WH}/${e.id}`, { key })).json()).toMatchObject({ enabled: true });
    } finally {
      await down.close();
    }
  });

  it('an endpoint failing for 3 days straight is disabled and says why; one success resets the count', async () => {
    const flaky = await startReceiver();
    try {
      const { key } = await h.account({ credits: 1 });
      const e = (await h.call('POST', WH, { key, body: { url: flaky.url } })).json<{ id: string }>();
      flaky.behave(() => 500);
      await h.call('POST', `${WH}/${e.id}/test`, { key });
      await flaky.until(1);
      // Two days of failures, then a success: the run of failures starts again.
      offset = 48 * HOUR;
      flaky.behave(() => 200);
      await flaky.until(2);
      await eventually(async () =>
        (await h.pool.query('SELECT failing_since FROM webhook_endpoints WHERE id = $1', [e.id])).rows[0]
          ?.failing_since === null
          ? true
          : undefined,
      );

      flaky.behave(() => 500);
      await h.call('POST', `${WH}/${e.id}/test`, { key });
      await flaky.until(3);
      offset = 48 * HOUR + 71 * HOUR;
      expect((await h.call('GET', `${WH}/${e.id}`, { key })).json()).toMatchObject({ enabled: true });
      offset = 48 * HOUR + 73 * HOUR;
      const disabled = await eventually(async () => {
        const x = (await h.call('GET', `${WH}/${e.id}`, { key })).json<{
          enabled: boolean;
          disabledReason: string | null;
        }>();
        return x.enabled ? undefined : x;
      });
      expect(disabled.disabledReason).toMatch(/^Every delivery failed since \d{4}-.*\(last: HTTP 500\)\.$/);
      // The delivery that disabled it stops; no new event is recorded for a disabled endpoint.
      const deliveries = (await h.call('GET', `${WH}/${e.id}/deliveries`, { key })).json<{
        data: { status: string }[];
      }>().data;
      expect(deliveries.map((d) => d.status)).toEqual(['failed', 'succeeded']);
    } finally {
      offset = 0;
      await flaky.close();
    }
  });
});

describe('the production retry schedule', () => {
  it('is what a delivery workflow waits between attempts: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h, then it gives up', async () => {
    // The real workflow against stub attempts that always fail; the redeliver signal skips each
    // wait once the history shows its timer, so nothing waits for real.
    const taskQueue = `${h.taskQueue}-schedule`;
    const asked: (number | null)[] = [];
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const worker = await Worker.create({
      connection,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: {
        attemptWebhookDelivery: async (req: AttemptRequest) => {
          asked.push(req.retryInMs);
          return {
            outcome: req.retryInMs === null ? 'failed' : 'retry',
            attempt: asked.length,
            statusCode: 500,
            error: null,
          };
        },
      },
    });
    const deliveryId = `whd_${'1'.repeat(26)}`;
    let result: unknown;
    try {
      result = await worker.runUntil(async () => {
        await createWebhookDispatcher({ client: h.client, taskQueue }).dispatch(deliveryId);
        const handle = h.client.workflow.getHandle(deliveryId);
        const timers: number[] = [];
        for (let i = 0; i < RETRY_SCHEDULE_MS.length; i++) {
          const timer = await eventually(
            async () => {
              const history = await handle.fetchHistory();
              const started = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
              return started.length > i ? started[i]!.timerStartedEventAttributes!.startToFireTimeout : undefined;
            },
            10_000,
            20,
          );
          timers.push(Number(timer!.seconds ?? 0) * 1000 + Math.round((timer!.nanos ?? 0) / 1e6));
          await handle.signal(redeliverSignal);
        }
        expect(timers).toEqual([
          5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
        ]);
        return handle.result() as Promise<unknown>;
      });
    } finally {
      await connection.close();
    }
    expect(result).toEqual({ deliveryId, outcome: 'failed' });
    expect(asked).toEqual([...RETRY_SCHEDULE_MS, null]);
  });
});
