/**
 * Deliveries stay out of the generations' way and out of each other's: a receiver that never
 * answers holds up neither generations nor other accounts' deliveries, and the outbox reaches
 * Temporal even when nothing that wrote it is still running, exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookRelay } from '../../../../runtime/webhook-relay';
import { createWebhookDispatcher } from '../../../../service/webhooks/dispatch';
import { newId } from '../../../../core/ids';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { eventOf, receiverPool } from '../../../support/webhook-receiver';

const DAY_MS = 86_400_000;
let h: Harness;
const receivers = receiverPool();
const receiver = receivers.start;
beforeAll(async () => {
  h = await startHarness({ webhooks: { retryScheduleMs: [200, 500, 1000, 1000] } });
});
afterAll(async () => {
  await receivers.closeAll();
  await h?.close();
});

interface Delivery {
  attempts: { statusCode: number | null; error: string | null; durationMs: number }[];
}

/** The deliveries recorded about one generation: how many, and how many are not over yet. */
async function deliveriesOf(generationId: string): Promise<{ n: number; pending: number }> {
  const r = await h.pool.query<{ n: number; pending: number }>(
    `SELECT count(*)::int AS n, (count(*) FILTER (WHERE status = 'pending'))::int AS pending
       FROM webhook_deliveries WHERE generation_id = $1`,
    [generationId],
  );
  return r.rows[0]!;
}

describe('a receiver that never answers', () => {
  // What must hold however slow the machine is, not how long anything took: a hanging receiver's
  // deliveries take minutes to give up (15 s an attempt, five attempts, four at a time per
  // endpoint), so anything that waited for them would still be waiting.
  it('holds up neither generations nor another account’s deliveries', async () => {
    const { key } = await h.account({ credits: 500 });
    const tarpit = await receiver();
    tarpit.behave(() => 'hang');
    const endpoints: string[] = [];
    for (let i = 0; i < 5; i++) {
      endpoints.push(
        (
          await h.call('POST', '/api/v1/webhooks', { key, body: { url: tarpit.url.replace('/hooks', `/hooks/${i}`) } })
        ).json<{ id: string }>().id,
      );
    }
    // Fill the tarpit: every endpoint with pings in flight, each waiting out its 15 s.
    for (const id of endpoints)
      for (let i = 0; i < 6; i++) await h.call('POST', `/api/v1/webhooks/${id}/test`, { key });
    await tarpit.until(10);

    // Each generation succeeds while every delivery about it is still pending: none waited for them.
    for (let i = 0; i < 8; i++) {
      const res = await h.call('POST', '/api/generate', {
        key,
        body: { kind: 'image', model: 'flux', prompt: `past the tarpit ${i}` },
      });
      const { generation } = res.json<{ generation: { id: string; status: string } }>();
      expect(generation.status).toBe('succeeded');
      const deliveries = await deliveriesOf(generation.id);
      expect(deliveries.n, `deliveries about generation ${i}`).toBeGreaterThanOrEqual(endpoints.length);
      expect(deliveries.pending, `deliveries about generation ${i} still pending`).toBe(deliveries.n);
    }

    // The hanging attempts end at the 15 s limit, and the log says so.
    const timedOut = await eventually(
      async () => {
        const [d] = (await h.call('GET', `/api/v1/webhooks/${endpoints[0]!}/deliveries?limit=100`, { key }))
          .json<{ data: Delivery[] }>()
          .data.filter((x) => x.attempts.length > 0);
        return d;
      },
      30_000,
      250,
    );
    expect(timedOut.attempts[0]).toMatchObject({
      statusCode: null,
      error: 'The request did not complete within 15000 ms.',
    });
    expect(timedOut.attempts[0]!.durationMs).toBeGreaterThanOrEqual(14_900);

    // Meanwhile another account's receiver hears about its generation before the tarpit's backlog
    // is over: its delivery did not queue behind them.
    const other = await h.account({ credits: 10 });
    const prompt = await receiver();
    await h.call('POST', '/api/v1/webhooks', { key: other.key, body: { url: prompt.url } });
    await h.call('POST', '/api/generate', {
      key: other.key,
      body: { kind: 'image', model: 'flux', prompt: 'not stuck behind the tarpit' },
    });
    await prompt.until(1, eventOf('generation.completed'));
    const backlog = await h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1::text[]) AND status = 'pending'`,
      [endpoints],
    );
    expect(backlog.rows[0]!.n).toBeGreaterThan(0);
  });
});

describe('the outbox', () => {
  it('reaches Temporal when nothing that wrote it is running any more', async () => {
    const cold = await startHarness({ worker: false, webhooks: { retryScheduleMs: [200, 500] } });
    const r = await receiver();
    try {
      const { key } = await cold.account({ credits: 100 });
      const e = (await cold.call('POST', '/api/v1/webhooks', { key, body: { url: r.url, format: 'flat' } })).json<{
        id: string;
      }>();
      // The API records the delivery rows (admission's generation.queued, a ping) and goes away.
      await cold.call('POST', '/api/v1/generate', {
        key,
        body: {
          kind: 'video',
          model: 'seedance-lite',
          prompt: 'written, then the writer died',
          seconds: 3,
          quality: '480p',
        },
      });
      await cold.call('POST', `/api/v1/webhooks/${e.id}/test`, { key });
      await cold.app.close();
      const pending = await cold.pool.query(
        'SELECT event FROM webhook_deliveries WHERE dispatched_at IS NULL ORDER BY event',
      );
      expect(pending.rows.map((x: { event: string }) => x.event)).toEqual(['generation.queued', 'ping']);

      // A worker starts later (its relay finds the rows); the deliveries and the job carry on.
      await cold.startWorker();
      await r.until(1, eventOf('ping'));
      await r.until(1, eventOf('generation.queued'));
      await r.until(1, eventOf('generation.succeeded'), 30_000);
    } finally {
      await cold.close();
    }
  });

  it('starts each delivery once, however many relays race for it and however often it is dispatched', async () => {
    const r = await receiver();
    const { key } = await h.account({ credits: 1 });
    const e = (await h.call('POST', '/api/v1/webhooks', { key, body: { url: r.url } })).json<{ id: string }>();
    const dispatcher = createWebhookDispatcher({ client: h.client, taskQueue: h.webhookTaskQueue });
    const rival = startWebhookRelay({ pool: h.pool, dispatcher, pollMs: 100 });
    try {
      const ids = await Promise.all(
        Array.from(
          { length: 20 },
          async () => (await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key })).json<{ id: string }>().id,
        ),
      );
      await r.until(20);
      // A relay that died between its start and its mark would dispatch again: nothing is resent.
      for (const id of ids.slice(0, 5)) await dispatcher.dispatch(id);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const received = r.received.map((x) => String(x.headers['x-service-delivery']));
      expect(received.sort()).toEqual([...ids].sort());
      const undispatched = await h.pool.query(
        'SELECT count(*)::int AS n FROM webhook_deliveries WHERE dispatched_at IS NULL AND endpoint_id = $1',
        [e.id],
      );
      expect(undispatched.rows[0]).toEqual({ n: 0 });
    } finally {
      await rival.stop();
    }
  });
});

describe('the delivery log', () => {
  it('keeps finished deliveries for the retention, then drops them with their attempts; pending ones stay', async () => {
    const r = await receiver();
    const { key, accountId } = await h.account({ credits: 1 });
    const e = (await h.call('POST', '/api/v1/webhooks', { key, body: { url: r.url } })).json<{ id: string }>();
    const recent = (await h.call('POST', `/api/v1/webhooks/${e.id}/test`, { key })).json<{ id: string }>().id;
    await r.until(1);

    // Deliveries made 40 days ago (ids carry their creation time): two finished, one still pending.
    const old = (status: string) => ({ id: newId('whd', Date.now() - 40 * DAY_MS), status });
    const rows = [old('succeeded'), old('failed'), old('pending')];
    for (const row of rows) {
      await h.pool.query(
        `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event, status, attempts, dispatched_at, created_at)
         VALUES ($1, $2, $3, 'ping', $4, 1, now(), now() - interval '40 days')`,
        [row.id, e.id, accountId, row.status],
      );
      await h.pool.query(
        `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code) VALUES ($1, 1, now() - interval '40 days', 12, 200)`,
        [row.id],
      );
    }
    const listed = async () =>
      (await h.call('GET', `/api/v1/webhooks/${e.id}/deliveries?limit=100`, { key }))
        .json<{ data: { id: string }[] }>()
        .data.map((d) => d.id)
        .sort();
    expect(await listed()).toEqual([recent, ...rows.map((x) => x.id)].sort());

    const relay = startWebhookRelay({
      pool: h.pool,
      dispatcher: createWebhookDispatcher({ client: h.client, taskQueue: h.webhookTaskQueue }),
      pollMs: 100,
      retentionMs: 30 * DAY_MS,
    });
    try {
      const [gone1, gone2, pending] = rows.map((x) => x.id);
      await eventually(async () => ((await listed()).length === 2 ? true : undefined), 10_000);
      expect(await listed()).toEqual([recent, pending].sort());
      const attempts = await h.pool.query<{ delivery_id: string }>(
        'SELECT delivery_id FROM webhook_attempts WHERE delivery_id = ANY($1::text[])',
        [[gone1, gone2, pending]],
      );
      expect(attempts.rows.map((a) => a.delivery_id)).toEqual([pending]);
    } finally {
      await relay.stop();
    }
  });
});
