/**
 * Webhooks end to end: the registration API against its OpenAPI document, deliveries
 * for generations of groups A and C to receivers on loopback (development mode), signatures
 * checked independently (node:crypto) and with the `standardwebhooks` package, retries with the
 * same delivery id, the delivery log, replays, 410 Gone.
 */
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { freePort } from '../../../../runtime/process';
import {
  ADMIN_TOKEN,
  eventually,
  startHarness,
  WEBHOOK_SECRET_KEY,
  withScratchDatabase,
} from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';
import { eventOf, receiverPool } from '../../../support/webhook-receiver';
import type { Received } from '../../../support/webhook-receiver';

// Compressed: tests cannot wait 5 s, 5 min, 30 min… (the production schedule is unit-tested).
const SCHEDULE = [150, 300, 600, 1000, 1000, 1000, 1000, 1000, 1000];

let h: Harness;
let c: ReturnType<typeof createConformance>;
const receivers = receiverPool();
const receiver = receivers.start;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000, webhooks: { retryScheduleMs: SCHEDULE } });
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await receivers.closeAll();
  await h?.close();
});

interface Endpoint {
  id: string;
  url: string;
  format: 'nested' | 'flat';
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  previousSecretExpiresAt: string | null;
  secret?: string;
}
interface Delivery {
  id: string;
  event: string;
  generationId: string | null;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: {
    attempt: number;
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    nextRetryAt: string | null;
  }[];
}

const WH = '/api/v1/webhooks';
const register = async (key: string, body: Record<string, unknown>): Promise<Endpoint & { secret: string }> =>
  c.conforms(await h.call('POST', WH, { key, body }), 'post', WH, 201);

const deliveries = async (key: string, id: string, query = ''): Promise<Delivery[]> =>
  c.conforms<{ data: Delivery[] }>(
    await h.call('GET', `${WH}/${id}/deliveries${query}`, { key }),
    'get',
    `${WH}/{id}/deliveries`,
    200,
  ).data;

/** The spec's formula, computed here with node:crypto rather than by the code under test. */
function expectedV1(secret: string, t: string, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${body}`).digest('hex');
}

function parseSignature(header: string | string[] | undefined): { t: string; v1: string[] } {
  const parts = String(header).split(',');
  return {
    t: parts.find((p) => p.startsWith('t='))!.slice(2),
    v1: parts.filter((p) => p.startsWith('v1=')).map((p) => p.slice(3)),
  };
}

function expectSigned(r: Received, secret: string): void {
  const { t, v1 } = parseSignature(r.headers['x-service-signature']);
  expect(v1).toContain(expectedV1(secret, t, r.body));
  expect(Math.abs(Date.now() / 1000 - Number(t))).toBeLessThanOrEqual(300);
  // Standard Webhooks, checked by the library receivers use.
  expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
}

describe('registration', () => {
  it('creates an endpoint and shows its secret once; lists, reads and updates it without the secret; deletes it', async () => {
    const { key } = await h.account({ credits: 10 });
    const created = await register(key, {
      url: 'https://localhost/hooks',
      events: ['generation.completed'],
      description: 'main',
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    expect(created).toMatchObject({
      format: 'nested',
      events: ['generation.completed'],
      enabled: true,
      disabledReason: null,
    });

    const listed = c.conforms<{ data: Endpoint[] }>(await h.call('GET', WH, { key }), 'get', WH, 200).data;
    expect(listed.map((e) => e.id)).toEqual([created.id]);
    expect(listed[0]).not.toHaveProperty('secret');
    const read = c.conforms<Endpoint>(await h.call('GET', `${WH}/${created.id}`, { key }), 'get', `${WH}/{id}`, 200);
    expect(read).not.toHaveProperty('secret');

    const patched = c.conforms<Endpoint>(
      await h.call('PATCH', `${WH}/${created.id}`, {
        key,
        body: { events: ['generation.failed', 'generation.completed'], description: null, enabled: false },
      }),
      'patch',
      `${WH}/{id}`,
      200,
    );
    expect(patched).toMatchObject({
      events: ['generation.completed', 'generation.failed'],
      description: null,
      enabled: false,
      disabledReason: 'Disabled through the API.',
    });
    expect(
      c.conforms<Endpoint>(
        await h.call('PATCH', `${WH}/${created.id}`, { key, body: { enabled: true } }),
        'patch',
        `${WH}/{id}`,
        200,
      ),
    ).toMatchObject({ enabled: true, disabledReason: null });

    expect(c.conforms(await h.call('DELETE', `${WH}/${created.id}`, { key }), 'delete', `${WH}/{id}`, 200)).toEqual({
      id: created.id,
      deleted: true,
    });
    c.conforms(await h.call('GET', `${WH}/${created.id}`, { key }), 'get', `${WH}/{id}`, 404);
  });

  it('refuses a 6th endpoint with a clear message', async () => {
    const { key } = await h.account({ credits: 10 });
    for (let i = 0; i < 5; i++) await register(key, { url: `https://localhost/hooks/${i}` });
    const { error } = c.conforms<{ error: { message: string; type: string } }>(
      await h.call('POST', WH, { key, body: { url: 'https://localhost/six' } }),
      'post',
      WH,
      400,
    );
    expect(error).toMatchObject({ type: 'invalid_request_error' });
    expect(error.message).toMatch(/at most 5 webhook endpoints/);
  });

  it('refuses events outside the format’s catalogue, plain http to another host, unknown fields', async () => {
    const { key } = await h.account({ credits: 10 });
    const bad: [Record<string, unknown>, RegExp][] = [
      [
        { url: 'https://localhost/h', events: ['generation.queued'] },
        /'generation.queued' is not in the nested catalogue/,
      ],
      [{ url: 'https://localhost/h', format: 'flat', events: ['generation.completed'] }, /not in the flat catalogue/],
      [{ url: 'http://example.com/h' }, /must be https/],
      [{ url: 'ftp://localhost/h' }, /scheme/],
      [{ url: 'https://localhost/h', secret: 'mine' }, /Unknown field 'secret'/],
    ];
    for (const [body, message] of bad) {
      const { error } = c.conforms<{ error: { message: string } }>(
        await h.call('POST', WH, { key, body }),
        'post',
        WH,
        400,
      );
      expect(error.message).toMatch(message);
    }
    const created = await register(key, { url: 'https://localhost/h' });
    const { error } = c.conforms<{ error: { param: string } }>(
      await h.call('PATCH', `${WH}/${created.id}`, { key, body: { url: 'http://example.com/' } }),
      'patch',
      `${WH}/{id}`,
      400,
    );
    expect(error.param).toBe('url');
  });

  it('answers 404 for another account’s endpoint and deliveries, on every route', async () => {
    const a = await h.account({ credits: 10 });
    const b = await h.account({ credits: 10 });
    const theirs = await register(a.key, { url: 'https://localhost/a' });
    const ping = c.conforms<Delivery>(
      await h.call('POST', `${WH}/${theirs.id}/test`, { key: a.key }),
      'post',
      `${WH}/{id}/test`,
      202,
    );
    const routes: [Method, string, string, unknown][] = [
      ['get', `${WH}/{id}`, `${WH}/${theirs.id}`, undefined],
      ['patch', `${WH}/{id}`, `${WH}/${theirs.id}`, { enabled: false }],
      ['delete', `${WH}/{id}`, `${WH}/${theirs.id}`, undefined],
      ['post', `${WH}/{id}/rotate-secret`, `${WH}/${theirs.id}/rotate-secret`, undefined],
      ['get', `${WH}/{id}/deliveries`, `${WH}/${theirs.id}/deliveries`, undefined],
      [
        'post',
        `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
        `${WH}/${theirs.id}/deliveries/${ping.id}/redeliver`,
        undefined,
      ],
      ['post', `${WH}/{id}/test`, `${WH}/${theirs.id}/test`, undefined],
    ];
    for (const [method, path, url, body] of routes) {
      const res = await h.app.inject({
        method: method.toUpperCase() as 'GET',
        url,
        headers: { authorization: `Bearer ${b.key}` },
        ...(body ? { payload: body } : {}),
      });
      c.conforms(res, method, path, 404);
    }
    // Still there for its owner; an unknown delivery of one's own endpoint is 404 too.
    c.conforms(await h.call('GET', `${WH}/${theirs.id}`, { key: a.key }), 'get', `${WH}/{id}`, 200);
    c.conforms(
      await h.call('POST', `${WH}/${theirs.id}/deliveries/whd_${'0'.repeat(26)}/redeliver`, { key: a.key }),
      'post',
      `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
      404,
    );
  });
});

describe('deliveries', () => {
  it('group C image: a signed generation.completed with the group C record; both signatures verify, tampering does not', async () => {
    const r = await receiver();
    const { key } = await h.account({ credits: 10 });
    const endpoint = await register(key, { url: r.url });
    const gen = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a signed lighthouse' },
    });
    const { generation } = gen.json<{ generation: { id: string } }>();
    const [got] = await r.until(1, eventOf('generation.completed'));
    const body = got!.json as { event: string; generation: Record<string, unknown> };
    expect(body).toEqual({
      event: 'generation.completed',
      generation: {
        id: generation.id,
        kind: 'image',
        model: 'image-flux',
        status: 'succeeded',
        outputUrl: expect.stringMatching(/^http:\/\/files\.test\/files\//),
        creditsCharged: 3,
        error: null,
      },
    });
    expect(got!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-service-event': 'generation.completed',
      'x-service-delivery': expect.stringMatching(/^whd_[0-9a-z]{26}$/),
    });
    expect(got!.headers['webhook-id']).toBe(got!.headers['x-service-delivery']);
    expect(got!.headers['webhook-timestamp']).toBe(parseSignature(got!.headers['x-service-signature']).t);
    expectSigned(got!, endpoint.secret);

    // A tampered body and a wrong secret fail, with our formula and with the library.
    const { t, v1 } = parseSignature(got!.headers['x-service-signature']);
    const tampered = got!.body.replace('"creditsCharged":3', '"creditsCharged":0');
    expect(v1).not.toContain(expectedV1(endpoint.secret, t, tampered));
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(v1).not.toContain(expectedV1(other, t, got!.body));
    expect(() => new Webhook(endpoint.secret).verify(tampered, got!.headers as Record<string, string>)).toThrow();
    expect(() => new Webhook(other).verify(got!.body, got!.headers as Record<string, string>)).toThrow();
    // The timestamp counts: the library refuses one older than its 5 minute tolerance.
    const stale = { ...got!.headers, 'webhook-timestamp': String(Number(t) - 400) } as unknown as Record<
      string,
      string
    >;
    expect(() => new Webhook(endpoint.secret).verify(got!.body, stale)).toThrow();

    // The receiver has the delivery a moment before its answer is written to the log.
    const logged = await eventually(async () => {
      const [d] = await deliveries(key, endpoint.id);
      return d?.status === 'pending' ? undefined : d;
    });
    expect(logged).toMatchObject({
      id: got!.headers['x-service-delivery'],
      event: 'generation.completed',
      generationId: generation.id,
      status: 'succeeded',
    });
    expect(logged.attempts).toMatchObject([{ attempt: 1, statusCode: 200, error: null, nextRetryAt: null }]);
  });

  it('group A video: a flat endpoint gets queued, running and succeeded; a nested one gets completed; a failure is generation.failed', async () => {
    const flat = await receiver();
    const nested = await receiver();
    const { key } = await h.account({ credits: 200 });
    const flatEndpoint = await register(key, { url: flat.url, format: 'flat' });
    const nestedEndpoint = await register(key, { url: nested.url, format: 'nested' });
    const ok = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', model: 'seedance-lite', prompt: 'waves sim:delay=300', seconds: 3, quality: '480p' },
    });
    expect(ok.statusCode).toBe(202);
    const id = ok.json<{ id: string }>().id;
    const events = await flat.until(3, (r) => r.json.generation_id === id);
    expect(events.map((e) => e.json.event).sort()).toEqual([
      'generation.queued',
      'generation.running',
      'generation.succeeded',
    ]);
    const succeeded = events.find(eventOf('generation.succeeded'))!;
    expect(succeeded.json).toEqual({
      event: 'generation.succeeded',
      generation_id: id,
      kind: 'video',
      output_url: expect.stringMatching(/^http:\/\/files\.test\//),
      credits_charged: 6,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(events.find(eventOf('generation.queued'))!.json).toMatchObject({ output_url: '', credits_charged: 0 });
    for (const e of events) expectSigned(e, flatEndpoint.secret);
    const [completed] = await nested.until(1, (r) => (r.json.generation as { id?: string } | undefined)?.id === id);
    expect(completed!.json).toMatchObject({
      event: 'generation.completed',
      generation: { id, kind: 'video', status: 'succeeded', creditsCharged: 6 },
    });
    // Tracing is off here: the outbox rows keep no trace context (tracing.test.ts has it on).
    const kept = await h.pool.query<{ trace_parent: string | null }>(
      'SELECT trace_parent FROM webhook_deliveries WHERE generation_id = $1',
      [id],
    );
    expect(kept.rows.map((r) => r.trace_parent)).toEqual([null, null, null, null]);

    // Images are not in catalogue B; a failed video is generation.failed in both.
    await h.call('POST', '/api/v1/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'not for flat' } });
    // Made for one of the platform's own users (X-Customer-Id): both formats name it, signed as the rest.
    const bad = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', model: 'seedance-lite', prompt: 'broken sim:fail', seconds: 3, quality: '480p' },
      headers: { 'x-customer-id': 'platform-user-7' },
    });
    const badId = bad.json<{ id: string }>().id;
    const [failed] = await flat.until(1, (r) => r.json.generation_id === badId && r.json.event === 'generation.failed');
    expect(failed!.json).toMatchObject({
      kind: 'video',
      output_url: '',
      credits_charged: 0,
      customer: 'platform-user-7',
    });
    expectSigned(failed!, flatEndpoint.secret);
    // Without a customer the flat payload is the spec's shape exactly (no customer field).
    expect(succeeded.json).not.toHaveProperty('customer');
    const [nestedFailed] = await nested.until(
      1,
      (r) => (r.json.generation as { id?: string } | undefined)?.id === badId,
    );
    expect(nestedFailed!.json).toMatchObject({
      event: 'generation.failed',
      generation: { status: 'failed', error: { code: 'provider_failed' }, customer: 'platform-user-7' },
    });
    expectSigned(nestedFailed!, nestedEndpoint.secret);
    await nested.until(3, () => true);
    expect(flat.received.filter((r) => r.json.kind === 'image')).toEqual([]);
  });

  it('generation.progress is opt-in in both catalogues: one signed delivery per 10 % step, in order, only to endpoints that list it', async () => {
    const flat = await receiver();
    const nested = await receiver();
    const plain = await receiver();
    const { key } = await h.account({ credits: 200 });
    const flatEndpoint = await register(key, {
      url: flat.url,
      format: 'flat',
      events: ['generation.succeeded', 'generation.progress'],
    });
    const nestedEndpoint = await register(key, {
      url: nested.url,
      events: ['generation.progress', 'generation.completed', 'generation.failed'],
    });
    const plainEndpoint = await register(key, { url: plain.url, format: 'flat' });
    // Without a list an endpoint gets its catalogue, which progress is not part of.
    expect(plainEndpoint.events).toEqual([
      'generation.queued',
      'generation.running',
      'generation.succeeded',
      'generation.failed',
    ]);
    expect(nestedEndpoint.events).toEqual(['generation.progress', 'generation.completed', 'generation.failed']);

    const ok = await h.call('POST', '/api/v1/generate', {
      key,
      body: {
        kind: 'video',
        model: 'seedance-lite',
        prompt: 'a slow tide sim:delay=4000',
        seconds: 3,
        quality: '480p',
      },
    });
    expect(ok.statusCode).toBe(202);
    const id = ok.json<{ id: string }>().id;
    const [done] = await flat.until(1, (r) => r.json.generation_id === id && r.json.event === 'generation.succeeded');
    expect(done).toBeDefined();
    await nested.until(1, (r) => r.json.event === 'generation.completed');
    await plain.until(3, (r) => r.json.generation_id === id);
    // Deliveries run in parallel: wait for the log to settle before counting what arrived.
    const settled = async (endpointId: string) =>
      eventually(async () => {
        const log = await deliveries(key, endpointId);
        return log.length > 0 && log.every((d) => d.status === 'succeeded') ? log : undefined;
      });
    const flatLog = await settled(flatEndpoint.id);
    await settled(nestedEndpoint.id);

    const flatSteps = flat.received.filter(eventOf('generation.progress'));
    const steps = flatSteps.map((r) => r.json.progress as number).sort((a, b) => a - b);
    expect(steps.length).toBeGreaterThanOrEqual(3);
    expect(new Set(steps).size).toBe(steps.length);
    for (const step of steps) expect(step % 10 === 0 && step >= 10 && step <= 90).toBe(true);
    expect(flatLog.filter((d) => d.event === 'generation.progress')).toHaveLength(steps.length);
    for (const r of flatSteps) {
      expect(r.json).toEqual({
        event: 'generation.progress',
        generation_id: id,
        kind: 'video',
        progress: expect.any(Number),
        output_url: '',
        credits_charged: 0,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      });
      expect(r.headers['x-service-event']).toBe('generation.progress');
      expectSigned(r, flatEndpoint.secret);
    }
    const nestedSteps = nested.received.filter(eventOf('generation.progress'));
    expect(nestedSteps.map((r) => r.json.progress as number).sort((a, b) => a - b)).toEqual(steps);
    for (const r of nestedSteps) {
      expect(r.json).toMatchObject({
        event: 'generation.progress',
        progress: expect.any(Number),
        generation: { id, kind: 'video', status: 'running', outputUrl: '', creditsCharged: 0, error: null },
      });
      expectSigned(r, nestedEndpoint.secret);
    }
    expect(plain.received.filter(eventOf('generation.progress'))).toEqual([]);
    // An image is not a long job: no progress for it, even to an endpoint that asks.
    await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'quick sim:delay=1500' },
    });
    await nested.until(2, (r) => r.json.event === 'generation.completed');
    expect(
      nested.received.filter(
        (r) => r.json.event === 'generation.progress' && (r.json.generation as { kind: string }).kind !== 'video',
      ),
    ).toEqual([]);
  });

  it('retries a failing receiver with the same delivery id until it answers 2xx; the log shows every attempt', async () => {
    const r = await receiver();
    r.behave((n) => (n < 2 ? 500 : 204));
    const { key } = await h.account({ credits: 10 });
    const endpoint = await register(key, { url: r.url });
    await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'third time lucky' } });
    const got = await r.until(3);
    expect(new Set(got.map((g) => g.headers['x-service-delivery'])).size).toBe(1);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    for (const g of got) expectSigned(g, endpoint.secret);
    const log = await eventually(async () => {
      const [d] = await deliveries(key, endpoint.id);
      return d?.status === 'succeeded' ? d : undefined;
    });
    expect(log.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
      [1, 500],
      [2, 500],
      [3, 204],
    ]);
    expect(log.attempts[0]!.nextRetryAt).not.toBeNull();
    expect(log.attempts[2]!.nextRetryAt).toBeNull();
    for (const a of log.attempts) expect(a.durationMs).toBeGreaterThanOrEqual(0);

    // A replay sends the same delivery again, with the same id, and adds to the same log.
    const replayed = c.conforms<Delivery>(
      await h.call('POST', `${WH}/${endpoint.id}/deliveries/${log.id}/redeliver`, { key }),
      'post',
      `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
      202,
    );
    expect(replayed.id).toBe(log.id);
    const again = await r.until(4);
    expect(again[3]!.headers['x-service-delivery']).toBe(log.id);
    await eventually(async () => ((await deliveries(key, endpoint.id))[0]!.attempts.length === 4 ? true : undefined));
  });

  it('a receiver that is down for a while gets every event once it is back', async () => {
    const r = await receiver();
    const port = r.port;
    const { key } = await h.account({ credits: 50 });
    await register(key, { url: r.url });
    await r.close();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await h.call('POST', '/api/generate', {
        key,
        body: { kind: 'image', model: 'flux', prompt: `while down ${i}` },
      });
      ids.push(res.json<{ generation: { id: string } }>().generation.id);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const back = await receiver({ port });
    const got = await back.until(4, eventOf('generation.completed'));
    expect(new Set(got.map((g) => (g.json.generation as { id: string }).id))).toEqual(new Set(ids));
  });

  it('sends a signed ping on test, lists deliveries page by page', async () => {
    const r = await receiver();
    const { key } = await h.account({ credits: 10 });
    const endpoint = await register(key, { url: r.url, format: 'flat' });
    const first = c.conforms<Delivery>(
      await h.call('POST', `${WH}/${endpoint.id}/test`, { key }),
      'post',
      `${WH}/{id}/test`,
      202,
    );
    expect(first).toMatchObject({ event: 'ping', generationId: null, status: 'pending' });
    await h.call('POST', `${WH}/${endpoint.id}/test`, { key });
    const pings = await r.until(2, eventOf('ping'));
    expect(pings[0]!.json).toEqual({ event: 'ping', endpoint_id: endpoint.id, created_at: expect.any(String) });
    expect(pings[0]!.headers['x-service-event']).toBe('ping');
    expectSigned(pings[0]!, endpoint.secret);

    const page1 = c.conforms<{ data: Delivery[]; next_cursor: string }>(
      await h.call('GET', `${WH}/${endpoint.id}/deliveries?limit=1`, { key }),
      'get',
      `${WH}/{id}/deliveries`,
      200,
    );
    expect(page1.data).toHaveLength(1);
    const page2 = c.conforms<{ data: Delivery[]; next_cursor: string | null }>(
      await h.call('GET', `${WH}/${endpoint.id}/deliveries?limit=1&cursor=${page1.next_cursor}`, { key }),
      'get',
      `${WH}/{id}/deliveries`,
      200,
    );
    expect(page2.data[0]!.id).toBe(first.id);
    expect(page2.next_cursor).toBeNull();
    c.conforms(
      await h.call('GET', `${WH}/${endpoint.id}/deliveries?cursor=nope`, { key }),
      'get',
      `${WH}/{id}/deliveries`,
      400,
    );
  });

  it('410 Gone disables the endpoint and says why; a disabled endpoint is not sent to until enabled again', async () => {
    const r = await receiver();
    r.behave(() => 410);
    const { key } = await h.account({ credits: 10 });
    const endpoint = await register(key, { url: r.url });
    const ping = c.conforms<Delivery>(
      await h.call('POST', `${WH}/${endpoint.id}/test`, { key }),
      'post',
      `${WH}/{id}/test`,
      202,
    );
    await r.until(1);
    const disabled = await eventually(async () => {
      const e = c.conforms<Endpoint>(await h.call('GET', `${WH}/${endpoint.id}`, { key }), 'get', `${WH}/{id}`, 200);
      return e.enabled ? undefined : e;
    });
    expect(disabled.disabledReason).toMatch(/410 Gone/);
    const [d] = await deliveries(key, endpoint.id);
    expect(d).toMatchObject({ id: ping.id, status: 'failed', attempts: [{ statusCode: 410 }] });

    // Generations no longer make deliveries for it; replays and tests are refused.
    await h.call('POST', '/api/generate', { key, body: { kind: 'image', model: 'flux', prompt: 'nobody listens' } });
    expect(await deliveries(key, endpoint.id)).toHaveLength(1);
    const { error } = c.conforms<{ error: { type: string } }>(
      await h.call('POST', `${WH}/${endpoint.id}/deliveries/${ping.id}/redeliver`, { key }),
      'post',
      `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
      409,
    );
    expect(error.type).toBe('endpoint_disabled');
    c.conforms(await h.call('POST', `${WH}/${endpoint.id}/test`, { key }), 'post', `${WH}/{id}/test`, 409);

    r.behave(() => 200);
    await h.call('PATCH', `${WH}/${endpoint.id}`, { key, body: { enabled: true } });
    c.conforms(
      await h.call('POST', `${WH}/${endpoint.id}/deliveries/${ping.id}/redeliver`, { key }),
      'post',
      `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
      202,
    );
    await r.until(2);
    await eventually(async () => ((await deliveries(key, endpoint.id))[0]!.status === 'succeeded' ? true : undefined));
  });

  it('rotating gives a new secret; meanwhile every delivery carries both signatures', async () => {
    const r = await receiver();
    const { key } = await h.account({ credits: 10 });
    const endpoint = await register(key, { url: r.url });
    const rotated = c.conforms<Endpoint & { secret: string }>(
      await h.call('POST', `${WH}/${endpoint.id}/rotate-secret`, { key }),
      'post',
      `${WH}/{id}/rotate-secret`,
      200,
    );
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt!) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    await h.call('POST', `${WH}/${endpoint.id}/test`, { key });
    const [got] = await r.until(1);
    expect(parseSignature(got!.headers['x-service-signature']).v1).toHaveLength(2);
    expect(String(got!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expectSigned(got!, rotated.secret);
    expectSigned(got!, endpoint.secret);
  });
});

const CALLBACK_LOG = `${WH}/callbacks/deliveries`;

describe('callback URLs named on jobs, through the webhook API', () => {
  it('the callback secret is made once and read without it; the log pages; a 410 disables that job’s callback alone', async () => {
    const r = await receiver();
    r.behave(() => 410);
    const { key } = await h.account({ credits: 50 });
    const SECRET = `${WH}/callback-secret`;
    c.conforms(await h.call('GET', SECRET, { key }), 'get', SECRET, 404);
    const made = c.conforms<{ secret: string }>(
      await h.call('POST', `${SECRET}/rotate`, { key }),
      'post',
      `${SECRET}/rotate`,
      200,
    );
    expect(made.secret).toMatch(/^whsec_/);
    const read = c.conforms<object>(await h.call('GET', SECRET, { key }), 'get', SECRET, 200);
    expect(read).toMatchObject({ previousSecretExpiresAt: null });
    expect(JSON.stringify(read)).not.toContain(made.secret);

    const gone = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a gone receiver', webhook: r.url },
    });
    const id = gone.json<{ id: string }>().id;
    const [failed] = await eventually(async () => {
      const log = c.conforms<{ data: { id: string; status: string; url: string }[] }>(
        await h.call('GET', `${CALLBACK_LOG}?job=${id}&limit=1`, { key }),
        'get',
        CALLBACK_LOG,
        200,
      ).data;
      return log[0]?.status === 'failed' ? log : undefined;
    });
    expect(failed!.url).toBe(r.url);
    c.conforms(await h.call('GET', `${CALLBACK_LOG}?limit=0`, { key }), 'get', CALLBACK_LOG, 400);
    const REDELIVER = `${CALLBACK_LOG}/{deliveryId}/redeliver`;
    c.conforms(await h.call('POST', `${CALLBACK_LOG}/${failed!.id}/redeliver`, { key }), 'post', REDELIVER, 409);
    c.conforms(await h.call('POST', `${CALLBACK_LOG}/whd_nope/redeliver`, { key }), 'post', REDELIVER, 404);

    // Another job's callback to the same URL is a callback of its own, still on.
    r.behave(() => 200);
    const next = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'back again', webhook: r.url },
    });
    const nextId = next.json<{ id: string }>().id;
    await r.until(1, (x) => x.json.generation_id === nextId);
    const [sent] = c.conforms<{ data: { id: string }[] }>(
      await h.call('GET', `${CALLBACK_LOG}?job=${nextId}`, { key }),
      'get',
      CALLBACK_LOG,
      200,
    ).data;
    c.conforms(await h.call('POST', `${CALLBACK_LOG}/${sent!.id}/redeliver`, { key }), 'post', REDELIVER, 202);
    await r.until(2, (x) => x.json.generation_id === nextId);
  });
});

describe('the webhook routes conform to the document', () => {
  const everyRoute = (id: string, deliveryId: string): [Method, string, string, unknown][] => [
    ['post', WH, WH, { url: 'https://localhost/x' }],
    ['get', WH, WH, undefined],
    ['get', `${WH}/{id}`, `${WH}/${id}`, undefined],
    ['patch', `${WH}/{id}`, `${WH}/${id}`, { description: 'x' }],
    ['delete', `${WH}/{id}`, `${WH}/${id}`, undefined],
    ['post', `${WH}/{id}/rotate-secret`, `${WH}/${id}/rotate-secret`, undefined],
    ['get', `${WH}/{id}/deliveries`, `${WH}/${id}/deliveries`, undefined],
    [
      'post',
      `${WH}/{id}/deliveries/{deliveryId}/redeliver`,
      `${WH}/${id}/deliveries/${deliveryId}/redeliver`,
      undefined,
    ],
    ['post', `${WH}/{id}/test`, `${WH}/${id}/test`, undefined],
    ['get', `${WH}/callback-secret`, `${WH}/callback-secret`, undefined],
    ['post', `${WH}/callback-secret/rotate`, `${WH}/callback-secret/rotate`, undefined],
    ['get', CALLBACK_LOG, CALLBACK_LOG, undefined],
    ['post', `${CALLBACK_LOG}/{deliveryId}/redeliver`, `${CALLBACK_LOG}/${deliveryId}/redeliver`, undefined],
  ];
  const inject = (app: Harness['app'], method: Method, url: string, key: string | undefined, body: unknown) =>
    app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      headers: key ? { authorization: `Bearer ${key}` } : {},
      ...(body === undefined ? {} : { payload: body as object }),
    });
  const ID = `wh_${'0'.repeat(26)}`;
  const DELIVERY = `whd_${'0'.repeat(26)}`;

  it('401 without a valid key', async () => {
    for (const [method, path, url, body] of everyRoute(ID, DELIVERY)) {
      for (const key of [undefined, 'gsk_not-a-key']) {
        expect(c.conforms(await inject(h.app, method, url, key, body), method, path, 401)).toMatchObject({
          error: { type: 'authentication_error' },
        });
      }
    }
  });

  it('403 on every route for a key without the webhooks scope, before anything is looked up', async () => {
    const { key } = await h.account({ credits: 10, scopes: ['chat'] });
    for (const [method, path, url, body] of everyRoute(ID, DELIVERY)) {
      expect(c.conforms(await inject(h.app, method, url, key, body), method, path, 403)).toMatchObject({
        error: { type: 'permission_error' },
      });
    }
  });

  it('429 once the plan’s window is used up', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) c.conforms(await h.call('GET', WH, { key }), 'get', WH, 200);
    for (const [method, path, url, body] of everyRoute(ID, DELIVERY))
      c.conforms(await inject(h.app, method, url, key, body), method, path, 429);
  });

  it('503 when PostgreSQL cannot be reached, and when webhooks are not configured', async () => {
    const { key } = await h.account({ credits: 10 });
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const broken = await productionApi(h, {
      pool: unreachable,
    });
    try {
      for (const [method, path, url, body] of everyRoute(ID, DELIVERY))
        c.conforms(await inject(broken, method, url, key, body), method, path, 503);
    } finally {
      await broken.close();
      await unreachable.end();
    }
    const unconfigured = await productionApi(h);
    try {
      const { error } = c.conforms<{ error: { message: string } }>(
        await inject(unconfigured, 'post', WH, key, { url: 'https://localhost/x' }),
        'post',
        WH,
        503,
      );
      expect(error.message).toMatch(/not configured/);
    } finally {
      await unconfigured.close();
    }
  });

  it('500 without internals when the database answers but is broken', async () => {
    await withScratchDatabase(async (pool) => {
      const broken = await productionApi(h, {
        pool,
        webhooks: { secretKey: WEBHOOK_SECRET_KEY, developmentMode: true },
      });
      try {
        const made = await broken.inject({
          method: 'POST',
          url: '/admin/v1/accounts',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          payload: { plan: 'samurai', credits: 1 },
        });
        const account = made.json<{ id: string }>().id;
        const k = (
          await broken.inject({
            method: 'POST',
            url: `/admin/v1/accounts/${account}/keys`,
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            payload: { scopes: ['image', 'webhooks'] },
          })
        ).json<{ key: string }>().key;
        await pool.query(
          'DROP TABLE webhook_attempts, webhook_deliveries, webhook_endpoints, callback_secrets CASCADE',
        );
        for (const [method, path, url, body] of everyRoute(ID, DELIVERY)) {
          const { error } = c.conforms<{ error: { message: string } }>(
            await inject(broken, method, url, k, body),
            method,
            path,
            500,
          );
          expect(error.message).toBe('Internal error; retry shortly.');
        }
      } finally {
        await broken.close();
      }
    });
  });

  it('every documented status of the webhook routes was produced above', () => {
    c.expectCoverage('webhooks.test.ts');
  });
});
