import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { generate, untilFinished } from '../../../support/api';
import { servedRoutes } from '../../../support/openapi';
import { login, userOf } from '../../../support/dashboard';

interface Generation {
  id: string;
  kind: string;
  status: string;
  creditsCharged: number;
  error: { code: string } | null;
}
interface Page {
  data: Generation[];
  next_cursor: string | null;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
});
afterAll(async () => {
  await h?.close();
});

const v1 = (key: string) => ({
  generate: async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await h.call('POST', '/api/v1/generate', { key, body, headers });
    return { status: res.statusCode, body: res.json<Generation>() };
  },
  get: async (id: string) => h.call('GET', `/api/v1/generations/${id}`, { key }),
  page: async (query: string) => {
    const res = await h.call('GET', `/api/v1/generations?${query}`, { key });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Page>();
  },
  cancel: async (id: string) => h.call('POST', `/api/v1/generations/${id}/cancel`, { key }),
  balance: async () =>
    (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>(),
});

const statusOf = async (id: string) =>
  (await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id])).rows[0]?.status;

describe('the generation list', () => {
  it('pages newest first, visiting every generation exactly once while others are created', async () => {
    const { key } = await h.account({ credits: 1_000 });
    const api = v1(key);
    const before = await Promise.all(
      Array.from({ length: 23 }, (_, i) =>
        api.generate({ kind: 'chat', prompt: `before ${i}` }, { prefer: 'respond-async' }),
      ),
    );
    const existing = new Set(before.map((r) => r.body.id));

    // Page through with a small page size while new generations keep arriving.
    const arriving = Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api.generate({ kind: 'chat', prompt: `during ${i}` }, { prefer: 'respond-async' }),
      ),
    );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await api.page(`limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.data.length).toBeLessThanOrEqual(4);
      seen.push(...page.data.map((g) => g.id));
      cursor = page.next_cursor;
    } while (cursor);
    const created = await arriving;

    expect(new Set(seen).size, 'no generation twice').toBe(seen.length);
    for (const id of existing) expect(seen, `${id} existed before paging began`).toContain(id);
    expect([...seen].sort().reverse(), 'newest first').toEqual(seen);
    // Whatever arrived during paging and was shown is among those created; none is invented.
    const all = new Set([...existing, ...created.map((r) => r.body.id)]);
    for (const id of seen) expect(all.has(id)).toBe(true);
  });

  it('filters by kind and by status, and pages within the filter', async () => {
    const { key } = await h.account({ credits: 1_000 });
    const api = v1(key);
    await api.generate({ kind: 'chat', prompt: 'one' });
    await api.generate({ kind: 'image', model: 'flux', prompt: 'two' });
    await api.generate({ kind: 'image', model: 'flux', prompt: 'sim:fail three' });
    const video = await api.generate({ kind: 'video', model: 'seedance-lite', prompt: 'four sim:delay=200' });
    await eventually(async () => ((await statusOf(video.body.id)) === 'succeeded' ? true : undefined));

    expect((await api.page('kind=image')).data.map((g) => g.kind)).toEqual(['image', 'image']);
    expect((await api.page('status=failed')).data).toMatchObject([
      { kind: 'image', error: { code: 'provider_failed' } },
    ]);
    expect((await api.page('kind=image&status=succeeded')).data).toHaveLength(1);
    const first = await api.page('kind=image&limit=1');
    expect(first.next_cursor).not.toBeNull();
    const second = await api.page(`kind=image&limit=1&cursor=${first.next_cursor}`);
    expect(second.data).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
    expect(second.data[0]!.id < first.data[0]!.id).toBe(true);
    expect((await api.page('kind=upscale')).data).toEqual([]);
  });
});

describe('one store for every group', () => {
  it('a generation made through group C is read and listed through group A, and the other way round', async () => {
    const { key } = await h.account({ credits: 100 });
    const api = v1(key);
    const fromC = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'from C' });
    const fromA = await api.generate({ kind: 'image', model: 'flux', prompt: 'from A' });

    const readInA = await api.get(fromC.body.generation.id);
    expect(readInA.statusCode).toBe(200);
    expect(readInA.json()).toMatchObject({ id: fromC.body.generation.id, status: 'succeeded', creditsCharged: 3 });
    const readInC = await h.call('GET', `/api/generate/${fromA.body.id}`, { key });
    expect(readInC.json()).toMatchObject({ generation: { id: fromA.body.id, status: 'succeeded', creditsCharged: 3 } });
    expect((await api.page('')).data.map((g) => g.id)).toEqual([fromA.body.id, fromC.body.generation.id]);
    // One balance: both charges are in it, whichever door read it.
    expect(await api.balance()).toMatchObject({ balance: 94 });
    expect((await h.call('GET', '/api/credits', { key })).json()).toMatchObject({ balance: 94 });
  });
});

describe('cancel', () => {
  it('fails a running and a queued video with code cancelled, gives their holds back, and is harmless twice', async () => {
    const { key } = await h.account({ credits: 1_000 });
    const api = v1(key);
    // Five videos take the account's five slots; a sixth waits in the queue.
    const running = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        api.generate({ kind: 'video', model: 'seedance-lite', prompt: `busy ${i} sim:delay=30000` }),
      ),
    );
    await eventually(async () =>
      (await Promise.all(running.map((r) => statusOf(r.body.id)))).every((s) => s === 'running') ? true : undefined,
    );
    const queued = await api.generate({ kind: 'video', model: 'kling', prompt: 'waiting' });
    expect(queued.body.status).toBe('queued');
    expect(await api.balance()).toMatchObject({ holdsActive: 5 * 15 + 42.5 });

    const cancelQueued = await api.cancel(queued.body.id);
    expect(cancelQueued.statusCode).toBe(200);
    expect(cancelQueued.json()).toMatchObject({
      id: queued.body.id,
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'cancelled', retryable: false },
    });
    const cancelRunning = await api.cancel(running[0]!.body.id);
    expect(cancelRunning.json()).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    expect(await api.balance()).toMatchObject({ balance: 1_000 - 4 * 15, holdsActive: 4 * 15 });

    const again = await api.cancel(queued.body.id);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    const ledger = await h.pool.query<{ entry: string }>(
      'SELECT entry FROM ledger_entries WHERE generation_id = $1 ORDER BY id',
      [queued.body.id],
    );
    expect(ledger.rows.map((r) => r.entry)).toEqual(['hold', 'release']);

    for (const r of running.slice(1)) await api.cancel(r.body.id);
    expect(await api.balance()).toMatchObject({ balance: 1_000, holdsActive: 0 });
  });

  it('answers 409 with the state of a generation that already finished, and 404 for an unknown one', async () => {
    const { key } = await h.account({ credits: 10 });
    const api = v1(key);
    const done = await api.generate({ kind: 'chat', prompt: 'hello' });
    const res = await api.cancel(done.body.id);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ error: { type: 'generation_finished', code: 409, status: 'succeeded' } });
    expect((await api.cancel(`gen_${'0'.repeat(26)}`)).statusCode).toBe(404);
    expect((await api.cancel('nonsense')).statusCode).toBe(404);
  });
});

describe('authorization matrix', () => {
  type Who = 'none' | 'malformed' | 'revoked' | 'noScope' | 'otherAccount' | 'right' | 'session';
  /** `session`: the owner's dashboard session (cookie and CSRF token, as the dashboard sends them) instead of a key. */
  const WHO: readonly Who[] = ['none', 'malformed', 'revoked', 'noScope', 'otherAccount', 'right', 'session'];
  interface Ids {
    generation: string;
    /** A running video, fresh for each call. */
    cancellable: string;
    /** A succeeded video of the owner. */
    remixable: string;
    /** A webhook endpoint of the owner that every call may read. */
    endpoint: string;
    /** A delivery of that endpoint (its ping). */
    delivery: string;
    /** A delivery to a callback URL an image of the owner named. */
    callbackDelivery: string;
    /** A webhook endpoint fresh for each call, for the calls that change or delete it. */
    disposable: string;
    /** A finished batch of the owner. */
    batch: string;
    /** A running batch of the owner, fresh for each cancel. */
    cancellableBatch: string;
  }
  interface Row {
    request: (ids: Ids) => {
      method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
      url: string;
      body?: unknown;
      headers?: Record<string, string>;
    };
    /** Statuses for a key without the kind's scope, another account's key, and the right key. */
    expect: { noScope: number; otherAccount: number; right: number };
  }

  // Every keyed route of groups A and C. The test below fails if the app serves one not listed.
  const MATRIX: Record<string, Row> = {
    'POST /api/generate': {
      request: () => ({ method: 'POST', url: '/api/generate', body: { kind: 'image', model: 'flux', prompt: 'x' } }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/generate/:id': {
      request: (i) => ({ method: 'GET', url: `/api/generate/${i.generation}` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'GET /api/credits': {
      request: () => ({ method: 'GET', url: '/api/credits' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'POST /api/v1/generate': {
      request: () => ({ method: 'POST', url: '/api/v1/generate', body: { kind: 'image', model: 'flux', prompt: 'x' } }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'POST /api/v1/quote': {
      request: () => ({ method: 'POST', url: '/api/v1/quote', body: { kind: 'image', model: 'flux', prompt: 'x' } }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/balance': {
      request: () => ({ method: 'GET', url: '/api/v1/balance' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/generations': {
      request: () => ({ method: 'GET', url: '/api/v1/generations' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    // The account's own money and usage: any key of the account reads them, each key its own account's.
    'GET /api/v1/ledger': {
      request: () => ({ method: 'GET', url: '/api/v1/ledger' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/usage': {
      request: () => ({ method: 'GET', url: '/api/v1/usage' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/generations/:id': {
      request: (i) => ({ method: 'GET', url: `/api/v1/generations/${i.generation}` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'POST /api/v1/generations/:id/remix': {
      request: (i) => ({
        method: 'POST',
        url: `/api/v1/generations/${i.remixable}/remix`,
        body: { prompt: 'again sim:delay=60000' },
      }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    'POST /api/v1/generations/:id/extend': {
      request: (i) => ({
        method: 'POST',
        url: `/api/v1/generations/${i.remixable}/extend`,
        body: { seconds: 2, prompt: 'on sim:delay=60000' },
      }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    'POST /api/v1/generations/:id/edit': {
      request: (i) => ({
        method: 'POST',
        url: `/api/v1/generations/${i.remixable}/edit`,
        body: { prompt: 'in blue sim:delay=60000' },
      }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    // Live streams: a finished generation's stream, resumed after its end, closes at once.
    'GET /api/v1/generations/:id/events': {
      request: (i) => ({
        method: 'GET',
        url: `/api/v1/generations/${i.generation}/events`,
        headers: { 'last-event-id': '3' },
      }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'GET /api/v1/events': {
      request: (i) => ({ method: 'GET', url: `/api/v1/events?ids=${i.generation}` }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'POST /api/v1/generations/:id/cancel': {
      request: (i) => ({ method: 'POST', url: `/api/v1/generations/${i.cancellable}/cancel` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    // Webhooks: a key of the account with the webhooks scope manages its endpoints; another account's are 404.
    'POST /api/v1/webhooks': {
      request: () => ({ method: 'POST', url: '/api/v1/webhooks', body: { url: HOOK_URL } }),
      expect: { noScope: 403, otherAccount: 201, right: 201 },
    },
    'GET /api/v1/webhooks': {
      request: () => ({ method: 'GET', url: '/api/v1/webhooks' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/webhooks/:id': {
      request: (i) => ({ method: 'GET', url: `/api/v1/webhooks/${i.endpoint}` }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'PATCH /api/v1/webhooks/:id': {
      request: (i) => ({ method: 'PATCH', url: `/api/v1/webhooks/${i.disposable}`, body: { description: 'renamed' } }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'DELETE /api/v1/webhooks/:id': {
      request: (i) => ({ method: 'DELETE', url: `/api/v1/webhooks/${i.disposable}` }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'POST /api/v1/webhooks/:id/rotate-secret': {
      request: (i) => ({ method: 'POST', url: `/api/v1/webhooks/${i.disposable}/rotate-secret` }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'GET /api/v1/webhooks/:id/deliveries': {
      request: (i) => ({ method: 'GET', url: `/api/v1/webhooks/${i.endpoint}/deliveries` }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'POST /api/v1/webhooks/:id/deliveries/:deliveryId/redeliver': {
      request: (i) => ({ method: 'POST', url: `/api/v1/webhooks/${i.endpoint}/deliveries/${i.delivery}/redeliver` }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    'POST /api/v1/webhooks/:id/test': {
      request: (i) => ({ method: 'POST', url: `/api/v1/webhooks/${i.endpoint}/test` }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    // Callbacks named on jobs: the account's callback secret (each key reads its own) and their log.
    'GET /api/v1/webhooks/callback-secret': {
      request: () => ({ method: 'GET', url: '/api/v1/webhooks/callback-secret' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'POST /api/v1/webhooks/callback-secret/rotate': {
      request: () => ({ method: 'POST', url: '/api/v1/webhooks/callback-secret/rotate' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/webhooks/callbacks/deliveries': {
      request: () => ({ method: 'GET', url: '/api/v1/webhooks/callbacks/deliveries' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'POST /api/v1/webhooks/callbacks/deliveries/:deliveryId/redeliver': {
      request: (i) => ({
        method: 'POST',
        url: `/api/v1/webhooks/callbacks/deliveries/${i.callbackDelivery}/redeliver`,
      }),
      expect: { noScope: 403, otherAccount: 404, right: 202 },
    },
    // The account's customers and audit log: the customers and audit scopes; another account's customer is not found.
    'GET /api/v1/customer-defaults': {
      request: () => ({ method: 'GET', url: '/api/v1/customer-defaults' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'PUT /api/v1/customer-defaults': {
      request: () => ({
        method: 'PUT',
        url: '/api/v1/customer-defaults',
        body: { budget: null, rateLimitPerMinute: null },
      }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/customers': {
      request: () => ({ method: 'GET', url: '/api/v1/customers' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/customers/:customer': {
      request: () => ({ method: 'GET', url: '/api/v1/customers/matrix-user' }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'DELETE /api/v1/customers/:customer/limits': {
      request: () => ({ method: 'DELETE', url: '/api/v1/customers/matrix-user/limits' }),
      expect: { noScope: 403, otherAccount: 404, right: 200 },
    },
    'PUT /api/v1/customers/:customer/limits': {
      request: () => ({
        method: 'PUT',
        url: '/api/v1/customers/matrix-user/limits',
        body: { rateLimitPerMinute: 100 },
      }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/audit-log': {
      request: () => ({ method: 'GET', url: '/api/v1/audit-log' }),
      expect: { noScope: 403, otherAccount: 200, right: 200 },
    },
    // Batches (made through group B): any key of the account reads, follows and cancels them.
    'GET /api/v1/batches': {
      request: () => ({ method: 'GET', url: '/api/v1/batches' }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
    'GET /api/v1/batches/:id': {
      request: (i) => ({ method: 'GET', url: `/api/v1/batches/${i.batch}` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'GET /api/v1/batches/:id/events': {
      request: (i) => ({ method: 'GET', url: `/api/v1/batches/${i.batch}/events` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'GET /api/v1/batches/:id/output': {
      request: (i) => ({ method: 'GET', url: `/api/v1/batches/${i.batch}/output` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'GET /api/v1/batches/:id/errors': {
      request: (i) => ({ method: 'GET', url: `/api/v1/batches/${i.batch}/errors` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    'POST /api/v1/batches/:id/cancel': {
      request: (i) => ({ method: 'POST', url: `/api/v1/batches/${i.cancellableBatch}/cancel` }),
      expect: { noScope: 200, otherAccount: 404, right: 200 },
    },
    // MCP refuses a missing scope or another account's generation inside the answer (a tool error), never by HTTP status.
    'POST /api/mcp': {
      request: () => ({
        method: 'POST',
        url: '/api/mcp',
        headers: { accept: 'application/json, text/event-stream' },
        body: {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'matrix', version: '1' } },
        },
      }),
      expect: { noScope: 200, otherAccount: 200, right: 200 },
    },
  };
  /** A receiver nobody listens on: deliveries fail, which is fine for who may ask what. */
  const HOOK_URL = 'http://127.0.0.1:9/hook';
  /** Public or not part of groups A and C: no key is asked for (MCP's GET and DELETE are 405, OPTIONS the CORS preflight). */
  const PUBLIC = new Set(['GET /api/v1/models', 'GET /api/mcp', 'DELETE /api/mcp', 'OPTIONS /api/mcp']);

  it('lists every keyed route of groups A and C the app serves', async () => {
    await h.app.ready();
    const keyed = [...servedRoutes(h.app)]
      .map((r) => `${r.split(' ')[0]!.toUpperCase()} ${r.split(' ')[1]!}`)
      .filter((r) => /^\w+ \/api\//.test(r) && !PUBLIC.has(r));
    expect(keyed.sort()).toEqual(Object.keys(MATRIX).sort());
  });

  it('answers each route with the documented status for each kind of caller', async () => {
    const owner = await h.account({
      credits: 1_000,
      scopes: ['image', 'video', 'chat', 'upscale', 'webhooks', 'customers', 'audit'],
    });
    const stranger = await h.account({
      credits: 1_000,
      scopes: ['image', 'video', 'chat', 'webhooks', 'customers', 'audit'],
    });
    // A customer of the owner's, with limits of its own.
    const capped = await h.call('PUT', '/api/v1/customers/matrix-user/limits', {
      key: owner.key,
      body: { rateLimitPerMinute: 100 },
    });
    expect(capped.statusCode, capped.body).toBe(200);
    const chatOnly = await h.admin('POST', `/admin/v1/accounts/${owner.accountId}/keys`, { scopes: ['chat'] });
    const revoked = await h.admin('POST', `/admin/v1/accounts/${owner.accountId}/keys`, {
      scopes: ['image', 'video', 'chat'],
    });
    await h.admin('DELETE', `/admin/v1/keys/${revoked.json<{ id: string }>().id}`);
    const session = await login(h, await userOf(h, owner.accountId));
    const keys: Record<Exclude<Who, 'session'>, string | undefined> = {
      none: undefined,
      malformed: 'gsk_this-is-not-a-key',
      revoked: revoked.json<{ key: string }>().key,
      noScope: chatOnly.json<{ key: string }>().key,
      otherAccount: stranger.key,
      right: owner.key,
    };
    const generation = (await generate(h, owner.key, { kind: 'chat', prompt: 'mine' })).body.generation.id;
    const createEndpoint = async (): Promise<string> => {
      const res = await h.call('POST', '/api/v1/webhooks', { key: owner.key, body: { url: HOOK_URL } });
      expect(res.statusCode, res.body).toBe(201);
      return res.json<{ id: string }>().id;
    };
    const endpoint = await createEndpoint();
    const ping = await h.call('POST', `/api/v1/webhooks/${endpoint}/test`, { key: owner.key });
    const delivery = ping.json<{ id: string }>().id;
    for (const k of [owner.key, stranger.key])
      await h.call('POST', '/api/v1/webhooks/callback-secret/rotate', { key: k });
    const withCallback = await h.call('POST', '/api/v1/generate', {
      key: owner.key,
      body: { kind: 'image', model: 'flux', prompt: 'called back', webhook: HOOK_URL },
    });
    const callbackDelivery = (
      await h.call('GET', `/api/v1/webhooks/callbacks/deliveries?job=${withCallback.json<{ id: string }>().id}`, {
        key: owner.key,
      })
    ).json<{ data: { id: string }[] }>().data[0]!.id;
    const remixable = (
      await generate(h, owner.key, { kind: 'video', model: 'seedance-lite', prompt: 'short sim:delay=50' })
    ).body.generation.id;
    await untilFinished(h, owner.key, remixable);
    /** A chat batch of the owner (made through group B), with one line that succeeds and one that fails. */
    const makeBatch = async (lines: string[]): Promise<string> => {
      const boundary = 'matrixb0undary';
      const text = lines
        .map((content, i) =>
          JSON.stringify({
            custom_id: `m${i}`,
            method: 'POST',
            url: '/v1/chat/completions',
            body: { model: 'claude-haiku', messages: [{ role: 'user', content }], max_tokens: 10 },
          }),
        )
        .join('\n');
      const file = await h.app.inject({
        method: 'POST',
        url: '/v1/files',
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload:
          `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="m.jsonl"\r\n\r\n${text}\r\n--${boundary}--\r\n`,
      });
      const made = await h.call('POST', '/v1/batches', {
        key: owner.key,
        body: {
          input_file_id: file.json<{ id: string }>().id,
          endpoint: '/v1/chat/completions',
          completion_window: '24h',
        },
      });
      expect(made.statusCode, made.body).toBe(200);
      return made.json<{ id: string }>().id;
    };
    const batch = await makeBatch(['sim:tokens=2', 'sim:fail']);
    await eventually(async () =>
      (await h.call('GET', `/api/v1/batches/${batch}`, { key: owner.key })).json<{ status: string }>().status ===
      'completed'
        ? true
        : undefined,
    );

    const results: string[] = [];
    for (const [route, row] of Object.entries(MATRIX)) {
      for (const who of WHO) {
        // A fresh running video for every cancel, so each caller meets a cancellable generation (only
        // for that route: a video for every call would spend the key's rate limit).
        const cancellable = route.includes('generations/:id/cancel')
          ? (await generate(h, owner.key, { kind: 'video', model: 'seedance-lite', prompt: 'long sim:delay=60000' }))
              .body.generation.id
          : generation;
        const disposable =
          route.startsWith('PATCH') || route.startsWith('DELETE') || route.includes('rotate-secret')
            ? await createEndpoint()
            : endpoint;
        const cancellableBatch = route.includes('batches/:id/cancel') ? await makeBatch(['sim:delay=60000']) : batch;
        const { method, url, body, headers } = row.request({
          generation,
          cancellable,
          remixable,
          endpoint,
          delivery,
          callbackDelivery,
          disposable,
          batch,
          cancellableBatch,
        });
        const credentials =
          who === 'session'
            ? { headers: { ...headers, cookie: session.cookie, 'x-csrf-token': session.csrf } }
            : { ...(keys[who] ? { key: keys[who] } : {}), ...(headers ? { headers } : {}) };
        const res = await h.call(method, url, { ...credentials, ...(body === undefined ? {} : { body }) });
        // What a call created or left behind goes, so the account stays under its 5 endpoints.
        if (route === 'POST /api/v1/webhooks' && res.statusCode === 201)
          await h.call('DELETE', `/api/v1/webhooks/${res.json<{ id: string }>().id}`, { key: owner.key });
        if (disposable !== endpoint) await h.call('DELETE', `/api/v1/webhooks/${disposable}`, { key: owner.key });
        // Group C takes a session as it takes the account's key; groups A, MCP and webhooks want a key.
        const groupC = !/^\w+ \/api\/(v1\/|mcp)/.test(route);
        const expected =
          who === 'none' || who === 'malformed' || who === 'revoked'
            ? 401
            : who === 'session'
              ? groupC
                ? row.expect.right
                : 401
              : row.expect[who];
        results.push(
          `${route} ${who} ${res.statusCode === expected ? 'ok' : `${res.statusCode} (expected ${expected}: ${res.body.slice(0, 120)})`}`,
        );
        if (expected === 401)
          expect(res.json()).toMatchObject({
            error: { type: /\/api\/(v1\/|mcp)/.test(route) ? 'authentication_error' : 'unauthorized' },
          });
        if (res.statusCode === 404) expect(res.json()).toMatchObject({ error: { type: 'not_found' } });
        if (cancellable !== generation)
          await h.call('POST', `/api/v1/generations/${cancellable}/cancel`, { key: owner.key });
        if (cancellableBatch !== batch)
          await h.call('POST', `/api/v1/batches/${cancellableBatch}/cancel`, { key: owner.key });
      }
    }
    expect(results.filter((r) => !r.endsWith(' ok'))).toEqual([]);
  });
});
