/**
 * Every documented answer of Anthropic's Message Batch routes, produced for real and held to the
 * OpenAPI document (this file owns /v1/messages/batches in test/support/openapi.ts) and, for the
 * results, to the SDK's types: 200s, the 400s of the door and of the router, 401, 402, 403, 404,
 * 409, 413, 429, and 500 and 503 when PostgreSQL is broken or gone; a create's Idempotency-Key.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { messageBatchResult } from '../../../support/anthropic-shapes';
import { withBrokenDatabases } from '../../../support/broken-apps';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';

let h: Harness;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness({
    syncWaitMs: 20_000,
    batches: { fileLimits: { maxBytes: 4 * 1024 * 1024, maxLines: 1_000, maxLineBytes: 64 * 1024 } },
  });
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await h?.close();
});

const request = (id: string, content: string) => ({
  custom_id: id,
  params: { model: 'claude-haiku', max_tokens: 20, messages: [{ role: 'user' as const, content }] },
});

describe('the /v1/messages/batches routes conform to the OpenAPI document', () => {
  const MISSING = `batch_${'0'.repeat(26)}`;
  const inject = (app: FastifyInstance, method: Method, url: string, key: string | undefined, body?: unknown) =>
    app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      headers: { 'anthropic-version': '2023-06-01', ...(key ? { 'x-api-key': key } : {}) },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  const create = { requests: [request('one', 'sim:tokens=1')] };
  /** Every route with a request that reaches its handler: method, documented path, URL, body. */
  const everyRoute = (): [Method, string, string, unknown][] => [
    ['post', '/v1/messages/batches', '/v1/messages/batches', create],
    ['get', '/v1/messages/batches', '/v1/messages/batches', undefined],
    ['get', '/v1/messages/batches/{id}', `/v1/messages/batches/${MISSING}`, undefined],
    ['post', '/v1/messages/batches/{id}/cancel', `/v1/messages/batches/${MISSING}/cancel`, undefined],
    ['delete', '/v1/messages/batches/{id}', `/v1/messages/batches/${MISSING}`, undefined],
    ['get', '/v1/messages/batches/{id}/results', `/v1/messages/batches/${MISSING}/results`, undefined],
  ];

  it('200s, 400s, 402, 403, 404, 409 and 413', async () => {
    const { key } = await h.account({ credits: 100 });
    const call = (method: Method, url: string, body?: unknown) => inject(h.app, method, url, key, body);
    const made = c.conforms<{ id: string }>(
      await call('post', '/v1/messages/batches', create),
      'post',
      '/v1/messages/batches',
      200,
    );
    const byId = `/v1/messages/batches/${made.id}`;
    c.conforms(await call('get', `${byId}/results`), 'get', '/v1/messages/batches/{id}/results', 404);
    c.conforms(await call('delete', byId), 'delete', '/v1/messages/batches/{id}', 409);
    await eventually(async () =>
      (await call('get', byId)).json<{ processing_status: string }>().processing_status === 'ended' ? true : undefined,
    );
    c.conforms(await call('get', byId), 'get', '/v1/messages/batches/{id}', 200);
    const results = await call('get', `${byId}/results`);
    c.conforms(results, 'get', '/v1/messages/batches/{id}/results', 200);
    messageBatchResult.parse(JSON.parse(results.body.trim()));
    c.conforms(await call('get', '/v1/messages/batches?limit=1'), 'get', '/v1/messages/batches', 200);
    c.conforms(await call('get', '/v1/messages/batches?limit=0'), 'get', '/v1/messages/batches', 400);
    c.conforms(await call('post', `${byId}/cancel`), 'post', '/v1/messages/batches/{id}/cancel', 409);
    const slow = c.conforms<{ id: string }>(
      await call('post', '/v1/messages/batches', { requests: [request('slow', 'sim:delay=20000')] }),
      'post',
      '/v1/messages/batches',
      200,
    );
    c.conforms(
      await call('post', `/v1/messages/batches/${slow.id}/cancel`),
      'post',
      '/v1/messages/batches/{id}/cancel',
      200,
    );
    c.conforms(await call('delete', byId), 'delete', '/v1/messages/batches/{id}', 200);
    c.conforms(await call('post', '/v1/messages/batches', { requests: [{}] }), 'post', '/v1/messages/batches', 400);
    c.conforms(await call('post', '/v1/messages/batches', { ...create, x: 1 }), 'post', '/v1/messages/batches', 400);
    const huge = { requests: [request('big', 'x'.repeat(5 * 1024 * 1024))] };
    c.conforms(await call('post', '/v1/messages/batches', huge), 'post', '/v1/messages/batches', 413);
    const poor = await h.account({ credits: 0 });
    c.conforms(
      await inject(h.app, 'post', '/v1/messages/batches', poor.key, create),
      'post',
      '/v1/messages/batches',
      402,
    );
    const imagesOnly = await h.account({ credits: 10, scopes: ['image'] });
    c.conforms(
      await inject(h.app, 'post', '/v1/messages/batches', imagesOnly.key, create),
      'post',
      '/v1/messages/batches',
      403,
    );
    for (const [method, path, url] of everyRoute().slice(2)) {
      c.conforms(await call(method, url), method, path, 404);
      // Without anthropic-version, as Anthropic requires it.
      const unversioned = await h.app.inject({
        method: method.toUpperCase() as 'GET',
        url,
        headers: { 'x-api-key': key },
      });
      expect(c.conforms(unversioned, method, path, 400)).toMatchObject({ error: { type: 'invalid_request_error' } });
    }
  }, 60_000);

  it('a create repeated with its Idempotency-Key answers the same batch, held once; another body under the key is a 409', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const post = (body: unknown, idempotencyKey: string) =>
      h.app.inject({
        method: 'POST',
        url: '/v1/messages/batches',
        headers: { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'idempotency-key': idempotencyKey },
        payload: body as object,
      });
    const body = { requests: [request('a', 'sim:tokens=2'), request('b', 'sim:tokens=3')] };
    const made = (res: Awaited<ReturnType<typeof post>>) =>
      c.conforms<{ id: string }>(res, 'post', '/v1/messages/batches', 200).id;
    const first = made(await post(body, 'nightly-1'));
    // The same request again, its fields in another order: the same batch, nothing held again.
    expect(
      made(
        await post({ requests: body.requests.map((r) => ({ params: r.params, custom_id: r.custom_id })) }, 'nightly-1'),
      ),
    ).toBe(first);
    const conflict = await post({ requests: [request('c', 'sim:tokens=1')] }, 'nightly-1');
    expect(c.conforms(conflict, 'post', '/v1/messages/batches', 409)).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error' },
    });
    const other = made(await post(body, 'nightly-2'));
    expect(other).not.toBe(first);

    const holds = await h.pool.query<{ batch_id: string }>(
      "SELECT batch_id FROM ledger_entries WHERE account_id = $1 AND entry = 'hold' ORDER BY id",
      [accountId],
    );
    expect(holds.rows.map((r) => r.batch_id)).toEqual([first, other]);
    const batches = await h.pool.query('SELECT id FROM batches WHERE account_id = $1', [accountId]);
    expect(batches.rowCount).toBe(2);
    // Both end with every request charged once, nothing left held.
    const balance = await eventually(async () => {
      const b = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
      return b.holdsActive === 0 ? b : undefined;
    });
    const charges = await h.pool.query("SELECT 1 FROM ledger_entries WHERE account_id = $1 AND entry = 'charge'", [
      accountId,
    ]);
    expect(charges.rowCount).toBe(4);
    expect(balance.balance).toBeLessThan(100);
  });

  it('401 and 429 on every route', async () => {
    const { key } = await h.account({ credits: 10, plan: 'free' });
    for (const [method, path, url, body] of everyRoute()) {
      for (const auth of [undefined, 'gsk_bogus']) {
        const res = await inject(h.app, method, url, auth, body);
        expect(c.conforms(res, method, path, 401)).toMatchObject({ error: { type: 'authentication_error' } });
      }
    }
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await inject(h.app, 'get', '/v1/messages/batches', key);
    for (const [method, path, url, body] of everyRoute())
      c.conforms(await inject(h.app, method, url, key, body), method, path, 429);
  });

  it('503 when PostgreSQL cannot be reached and 500 when it is broken, in Anthropic’s shape, without internals', async () => {
    const { key } = await h.account({ credits: 10 });
    await withBrokenDatabases(h, async (app, status) => {
      for (const [method, path, url, body] of everyRoute()) {
        const { error } = c.conforms<{ error: { message: string } }>(
          await inject(app, method, url, key, body),
          method,
          path,
          status,
        );
        expect(error.message).not.toMatch(/ECONNREFUSED|relation|nowhere/);
      }
    });
  });

  it('every documented status of the /v1/messages/batches routes was produced above', () => {
    c.expectCoverage('anthropic-batches-routes.test.ts');
  });
});
