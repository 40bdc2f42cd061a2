/**
 * What a callback URL named on a job may be: the endpoints' address policy. Outside development
 * mode a callback on a private, loopback or metadata address is a 400 naming the door's field and
 * nothing is held or recorded; whatever a URL resolved to at submit, the delivery is checked again
 * when it connects, so a probe of the service's own network gets nothing. A bad filter, or no
 * callback secret yet, is a 400 too; callbacks are not among the account's five endpoints; a rotated
 * callback secret keeps signing beside the new one.
 */
import { createHmac } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import type { SafeHttpClient } from '../../../../core/net/safe-http';
import { newId } from '../../../../core/ids';
import { startWebhookRelay } from '../../../../runtime/webhook-relay';
import { createWebhookDispatcher } from '../../../../service/webhooks/dispatch';
import { eventually, startHarness, WEBHOOK_SECRET_KEY } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { startReceiver } from '../../../support/webhook-receiver';
import type { TestReceiver } from '../../../support/webhook-receiver';

/** There is no internet here: 127.0.0.2 stands in for a public host, the one address the worker's client trusts. */
const PUBLIC_STAND_IN = '127.0.0.2';
const VIDEO = { model: 'seedance-lite', prompt: 'waves sim:delay=200', seconds: 3, quality: '480p' };

let h: Harness;
let production: FastifyInstance;
let http: SafeHttpClient;
let internal: TestReceiver;
beforeAll(async () => {
  // The worker delivers as in production: loopback and private addresses are refused at connect time.
  http = createSafeHttpClient({ policy: { allowPrivateNetworks: false, trustedAddresses: [PUBLIC_STAND_IN] } });
  h = await startHarness({ webhooks: { http, retryScheduleMs: [60_000] } });
  production = await productionApi(h, {
    webhooks: { secretKey: WEBHOOK_SECRET_KEY, taskQueue: h.webhookTaskQueue, developmentMode: false },
  });
  internal = await startReceiver({ host: '127.0.0.1' });
});
afterAll(async () => {
  await internal?.close();
  await production?.close();
  await h?.close();
  http?.close();
});

const call = (app: FastifyInstance, key: string, method: 'GET' | 'POST', url: string, payload?: unknown) =>
  app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, ...(payload ? { payload } : {}) });

async function accountWithSecret(): Promise<{ key: string; accountId: string; secret: string }> {
  const { key, accountId } = await h.account({ credits: 100 });
  const made = await call(h.app, key, 'POST', '/api/v1/webhooks/callback-secret/rotate');
  expect(made.statusCode, made.body).toBe(200);
  return { key, accountId, secret: made.json<{ secret: string }>().secret };
}

function expectRefused(res: LightMyRequestResponse, param: string, message: RegExp): void {
  expect(res.statusCode, res.body).toBe(400);
  expect(res.json<{ error: { param: string; message: string } }>().error).toMatchObject({
    param,
    message: expect.stringMatching(message),
  });
}

/** Nothing was held, charged or recorded for the account. */
async function expectNothingHeld(key: string, accountId: string): Promise<void> {
  expect((await call(h.app, key, 'GET', '/api/v1/balance')).json()).toMatchObject({ balance: 100, holdsActive: 0 });
  const rows = await h.pool.query('SELECT id FROM generations WHERE account_id = $1', [accountId]);
  expect(rows.rowCount).toBe(0);
}

describe('a callback outside development mode', () => {
  it.each([
    ['group A', '/api/v1/generate', (url: string) => ({ kind: 'video', ...VIDEO, webhook: url }), 'webhook'],
    ['group C', '/api/generate', (url: string) => ({ kind: 'video', ...VIDEO, callbackUrl: url }), 'callbackUrl'],
    [
      'group B',
      '/v1/videos',
      (url: string) => ({ model: 'seedance-lite', prompt: 'waves', callback_url: url }),
      'callback_url',
    ],
    [
      'group B (the spec’s spelling)',
      '/v1/video/generations',
      (url: string) => ({ model: 'seedance-lite', prompt: 'waves', callback_url: url }),
      'callback_url',
    ],
  ])(
    '%s refuses a private address with a 400 naming its field, and holds nothing',
    async (_door, path, body, param) => {
      const { key, accountId } = await accountWithSecret();
      for (const [url, message] of [
        ['https://10.0.0.1/hook', /private network/],
        ['https://127.0.0.1/hook', /loopback/],
        ['https://169.254.169.254/latest/meta-data/', /metadata/],
        ['https://localhost/hook', /resolves to a loopback/],
        ['http://example.com/hook', /must be https/],
      ] as const) {
        expectRefused(await call(production, key, 'POST', path, body(url)), param, message);
      }
      await expectNothingHeld(key, accountId);
    },
  );
});

describe('a callback checked again when it is delivered', () => {
  it('sends nothing to a loopback address the worker may not reach, and logs why', async () => {
    const { key } = await accountWithSecret();
    // Development mode lets the submit name loopback; the worker's client, as in production, refuses it.
    const res = await call(h.app, key, 'POST', '/api/v1/generate', { kind: 'video', ...VIDEO, webhook: internal.url });
    expect(res.statusCode, res.body).toBe(202);
    const id = res.json<{ id: string }>().id;
    const attempt = await eventually(async () => {
      const log = await call(h.app, key, 'GET', `/api/v1/webhooks/callbacks/deliveries?job=${id}`);
      const first = log.json<{ data: { attempts: { statusCode: number | null; error: string | null }[] }[] }>().data[0];
      return first?.attempts[0];
    });
    expect(attempt).toMatchObject({ statusCode: null, error: expect.stringMatching(/loopback/) });
    expect(internal.received).toHaveLength(0);
  });

  it('answers a log asked for a job id no id can be (a NUL byte) with 400, not a database error', async () => {
    const { key } = await accountWithSecret();
    const res = await call(h.app, key, 'GET', '/api/v1/webhooks/callbacks/deliveries?job=%C2%85%00u');
    expect(res.statusCode, res.body).toBe(400);
  });
});

describe('refusals before anything is held', () => {
  it('a callback without a callback secret, a filter word it does not know, or a filter without a URL', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const video = { kind: 'video', ...VIDEO };
    expectRefused(
      await call(h.app, key, 'POST', '/api/v1/generate', { ...video, webhook: 'http://127.0.0.1:9/h' }),
      'webhook',
      /no callback secret/,
    );
    expect((await call(h.app, key, 'GET', '/api/v1/webhooks/callback-secret')).statusCode).toBe(404);
    await call(h.app, key, 'POST', '/api/v1/webhooks/callback-secret/rotate');
    expectRefused(
      await call(h.app, key, 'POST', '/api/v1/generate', {
        ...video,
        webhook: 'http://127.0.0.1:9/h',
        webhook_events_filter: ['finished'],
      }),
      'webhook_events_filter',
      /'finished' is not an event/,
    );
    expectRefused(
      await call(h.app, key, 'POST', '/api/generate', { ...video, callbackEvents: ['queued'] }),
      'callbackEvents',
      /goes with callbackUrl/,
    );
    await expectNothingHeld(key, accountId);
  });
});

describe('callbacks and the account’s endpoints', () => {
  it('are not listed among them nor counted in their five; a rotation signs with both secrets for a while', async () => {
    const { key, secret } = await accountWithSecret();
    const receiver = await startReceiver({ host: PUBLIC_STAND_IN });
    try {
      const rotated = await call(h.app, key, 'POST', '/api/v1/webhooks/callback-secret/rotate');
      const next = rotated.json<{ secret: string; previousSecretExpiresAt: string | null }>();
      expect(next.secret).not.toBe(secret);
      expect(next.previousSecretExpiresAt).not.toBeNull();
      const read = await call(h.app, key, 'GET', '/api/v1/webhooks/callback-secret');
      expect(read.json()).not.toHaveProperty('secret');

      for (let i = 0; i < 6; i++) {
        const res = await call(h.app, key, 'POST', '/api/v1/generate', {
          kind: 'image',
          model: 'flux',
          prompt: `a fox ${i}`,
          webhook: receiver.url,
        });
        expect(res.statusCode, res.body).toBe(200);
      }
      expect((await call(h.app, key, 'GET', '/api/v1/webhooks')).json()).toEqual({ data: [] });
      for (let i = 0; i < 5; i++) {
        const made = await call(h.app, key, 'POST', '/api/v1/webhooks', { url: `https://localhost/hook-${i}` });
        expect(made.statusCode, made.body).toBe(201);
      }

      // An image sends only its end; signed with the new secret and the previous one.
      const [got] = await receiver.until(1, (r) => r.json.event === 'generation.succeeded');
      const parts = String(got!.headers['x-service-signature']).split(',');
      const t = parts.find((p) => p.startsWith('t='))!.slice(2);
      const v1 = (s: string) => createHmac('sha256', Buffer.from(s, 'utf8')).update(`${t}.${got!.body}`).digest('hex');
      expect(parts.filter((p) => p.startsWith('v1='))).toEqual([`v1=${v1(next.secret)}`, `v1=${v1(secret)}`]);
    } finally {
      await receiver.close();
    }
  });
});

describe('callbacks past the log’s retention', () => {
  it('go once their deliveries have gone; a callback with a delivery still kept stays', async () => {
    const DAY_MS = 86_400_000;
    const { key, accountId } = await accountWithSecret();
    /** A callback made 40 days ago (ids carry their creation time) with one finished delivery made `daysAgo`. */
    const oldCallback = async (daysAgo: number): Promise<string> => {
      const made = await call(h.app, key, 'POST', '/api/v1/generate', { kind: 'image', model: 'flux', prompt: 'old' });
      const generation = made.json<{ id: string }>().id;
      const id = newId('wh', Date.now() - 40 * DAY_MS);
      await h.pool.query(
        `INSERT INTO webhook_endpoints (id, account_id, url, format, job_generation_id)
         VALUES ($1, $2, 'https://example.com/h', 'flat', $3)`,
        [id, accountId, generation],
      );
      await h.pool.query(
        `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, generation_id, event, status, attempts, dispatched_at)
         VALUES ($1, $2, $3, $4, 'generation.succeeded', 'succeeded', 1, now())`,
        [newId('whd', Date.now() - daysAgo * DAY_MS), id, accountId, generation],
      );
      return id;
    };
    const spent = await oldCallback(35);
    const kept = await oldCallback(1);
    const exists = async (id: string) =>
      ((await h.pool.query('SELECT 1 FROM webhook_endpoints WHERE id = $1', [id])).rowCount ?? 0) > 0;

    const relay = startWebhookRelay({
      pool: h.pool,
      dispatcher: createWebhookDispatcher({ client: h.client, taskQueue: h.webhookTaskQueue }),
      pollMs: 100,
      retentionMs: 30 * DAY_MS,
    });
    try {
      await eventually(async () => ((await exists(spent)) ? undefined : true), 10_000);
      expect(await exists(kept)).toBe(true);
    } finally {
      await relay.stop();
    }
  });
});
