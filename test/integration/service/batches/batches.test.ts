/**
 * Batches seen from the other doors: group A lists, reads, follows live (SSE), cancels and
 * downloads them; endpoints that list the batch events get them signed, in both formats, and a
 * batch's lines send no generation events; MCP makes, reads and cancels them with the official SDK
 * client; the dashboard shows, cancels and downloads them. Every documented answer of group A's and
 * the dashboard's batch routes is held to the OpenAPI document.
 */
import { createHmac } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { withBrokenDatabases } from '../../../support/broken-apps';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { dashboardUser, login } from '../../../support/dashboard';
import { createConformance, loadDocument } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';
import { eventOf, receiverPool } from '../../../support/webhook-receiver';

let h: Harness;
let c: ReturnType<typeof createConformance>;
let mcpUrl: URL;
const receivers = receiverPool();
const clients: Client[] = [];
beforeAll(async () => {
  h = await startHarness({
    syncWaitMs: 20_000,
    webhooks: { retryScheduleMs: [150, 300, 600] },
    batchLimits: { perBatch: 2, perAccount: 4 },
  });
  c = createConformance(await loadDocument(h.app));
  mcpUrl = new URL('/api/mcp', await h.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await receivers.closeAll();
  await h?.close();
});

const MISSING = `batch_${'0'.repeat(26)}`;
const chatLine = (i: number, content: string) => ({
  custom_id: `c${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'claude-haiku', messages: [{ role: 'user', content }], max_tokens: 20 },
});

/** Uploads the lines (multipart, as the SDK does) and makes a batch of them through group B. */
async function makeBatch(key: string, lines: unknown[], endpoint = '/v1/chat/completions') {
  const boundary = 'b0undary';
  const text = lines.map((l) => JSON.stringify(l)).join('\n');
  const payload =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  const file = await h.app.inject({
    method: 'POST',
    url: '/v1/files',
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
  expect(file.statusCode, file.body).toBe(200);
  const made = await h.call('POST', '/v1/batches', {
    key,
    body: { input_file_id: file.json<{ id: string }>().id, endpoint, completion_window: '24h' },
  });
  expect(made.statusCode, made.body).toBe(200);
  return made.json<{ id: string; status: string }>();
}

interface GroupABatch {
  id: string;
  status: string;
  requestCounts: { total: number; completed: number; failed: number };
  creditsHeld: number;
  creditsCharged: number;
  outputFileId: string | null;
  errorFileId: string | null;
}

const untilEnded = (key: string, id: string) =>
  eventually(
    async () => {
      const b = (await h.call('GET', `/api/v1/batches/${id}`, { key })).json<GroupABatch>();
      return ['completed', 'cancelled', 'expired', 'failed'].includes(b.status) ? b : undefined;
    },
    60_000,
    250,
  );

describe('group A', () => {
  it('lists, reads, follows live until done, and downloads the output and error files', async () => {
    const { key } = await h.account({ credits: 100 });
    const made = await makeBatch(key, [
      chatLine(1, 'sim:tokens=3 sim:delay=300'),
      chatLine(2, 'sim:tokens=3 sim:delay=300'),
      chatLine(3, 'sim:fail'),
    ]);
    const stream = await fetch(`${mcpUrl.origin}/api/v1/batches/${made.id}/events`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await stream.text();
    const events = [...text.matchAll(/event: (\w+)\ndata: (.*)\n/g)].map((m) => ({
      event: m[1],
      batch: JSON.parse(m[2]!) as GroupABatch,
    }));
    expect(events.at(-1)).toMatchObject({ event: 'done', batch: { status: 'completed' } });
    const ended = events.map((e) => e.batch.requestCounts.completed + e.batch.requestCounts.failed);
    expect(ended).toEqual([...ended].sort((a, b) => a - b));
    expect(events.some((e) => e.event === 'progress')).toBe(true);

    const b = c.conforms<GroupABatch>(
      await h.call('GET', `/api/v1/batches/${made.id}`, { key }),
      'get',
      '/api/v1/batches/{id}',
      200,
    );
    expect(b).toMatchObject({ status: 'completed', requestCounts: { total: 3, completed: 2, failed: 1 } });
    const list = c.conforms<{ data: GroupABatch[]; next_cursor: string | null }>(
      await h.call('GET', '/api/v1/batches?limit=1', { key }),
      'get',
      '/api/v1/batches',
      200,
    );
    expect(list.data.map((x) => x.id)).toEqual([made.id]);
    const output = await h.call('GET', `/api/v1/batches/${made.id}/output`, { key });
    c.conforms(output, 'get', '/api/v1/batches/{id}/output', 200);
    expect(
      output.body
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { custom_id: string }).custom_id),
    ).toEqual(['c1', 'c2']);
    const errors = await h.call('GET', `/api/v1/batches/${made.id}/errors`, { key });
    c.conforms(errors, 'get', '/api/v1/batches/{id}/errors', 200);
    expect(JSON.parse(errors.body.trim())).toMatchObject({ custom_id: 'c3', response: { status_code: 502 } });
    // The same file as group B serves it.
    const viaB = await h.call('GET', `/v1/files/${b.outputFileId!}/content`, { key });
    expect(viaB.body).toBe(output.body);
  });

  it('cancels; a second cancel answers it again; one that ended is 409; another account’s batch and bad ids are 404', async () => {
    const { key } = await h.account({ credits: 100 });
    const made = await makeBatch(
      key,
      [1, 2, 3, 4].map((i) => chatLine(i, 'sim:delay=20000 sim:tokens=2')),
    );
    const cancelling = c.conforms<GroupABatch>(
      await h.call('POST', `/api/v1/batches/${made.id}/cancel`, { key }),
      'post',
      '/api/v1/batches/{id}/cancel',
      200,
    );
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const done = await untilEnded(key, made.id);
    expect(done).toMatchObject({
      status: 'cancelled',
      requestCounts: { total: 4, completed: 0, failed: 4 },
      creditsCharged: 0,
    });
    expect((await h.call('GET', '/api/v1/balance', { key })).json()).toMatchObject({ balance: 100, holdsActive: 0 });
    c.conforms(
      await h.call('POST', `/api/v1/batches/${made.id}/cancel`, { key }),
      'post',
      '/api/v1/batches/{id}/cancel',
      200,
    );
    const quick = await makeBatch(key, [chatLine(1, 'sim:tokens=1')]);
    await untilEnded(key, quick.id);
    expect(
      c.conforms(
        await h.call('POST', `/api/v1/batches/${quick.id}/cancel`, { key }),
        'post',
        '/api/v1/batches/{id}/cancel',
        409,
      ),
    ).toMatchObject({ error: { type: 'batch_finished' } });
    const other = await h.account({ credits: 1 });
    for (const [method, path, url] of routesOf(made.id).filter(([, p]) => p !== '/api/v1/batches')) {
      c.conforms(await h.call(method.toUpperCase() as 'GET', url, { key: other.key }), method, path, 404);
    }
    c.conforms(
      await h.call('GET', `/api/v1/batches/${MISSING}/output`, { key }),
      'get',
      '/api/v1/batches/{id}/output',
      404,
    );
    c.conforms(
      await h.call('GET', `/api/v1/batches/${quick.id}/errors`, { key }),
      'get',
      '/api/v1/batches/{id}/errors',
      404,
    );
    c.conforms(await h.call('GET', '/api/v1/batches?cursor=nope', { key }), 'get', '/api/v1/batches', 400);
  });

  it('401 and 429 on every route', async () => {
    const { key } = await h.account({ credits: 1, plan: 'free' });
    for (const [method, path, url] of routesOf(MISSING)) {
      c.conforms(await h.call(method.toUpperCase() as 'GET', url), method, path, 401);
    }
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) await h.call('GET', '/api/v1/balance', { key });
    for (const [method, path, url] of routesOf(MISSING)) {
      c.conforms(await h.call(method.toUpperCase() as 'GET', url, { key }), method, path, 429);
    }
  });
});

/** Group A's batch routes: method, documented path, URL for the batch `id`. */
function routesOf(id: string): [Method, string, string][] {
  return [
    ['get', '/api/v1/batches', '/api/v1/batches'],
    ['get', '/api/v1/batches/{id}', `/api/v1/batches/${id}`],
    ['post', '/api/v1/batches/{id}/cancel', `/api/v1/batches/${id}/cancel`],
    ['get', '/api/v1/batches/{id}/events', `/api/v1/batches/${id}/events`],
    ['get', '/api/v1/batches/{id}/output', `/api/v1/batches/${id}/output`],
    ['get', '/api/v1/batches/{id}/errors', `/api/v1/batches/${id}/errors`],
  ];
}

describe('batch webhooks', () => {
  it('endpoints that list them get batch.completed and batch.cancelled, signed, nested and flat; the lines send no generation events', async () => {
    const { key } = await h.account({ credits: 100 });
    const nested = await receivers.start();
    const flat = await receivers.start();
    const register = async (url: string, format: string, events: string[]) =>
      (await h.call('POST', '/api/v1/webhooks', { key, body: { url, format, events } })).json<{ secret: string }>();
    const n = await register(nested.url, 'nested', ['generation.completed', 'batch.completed', 'batch.cancelled']);
    const f = await register(flat.url, 'flat', ['batch.completed', 'batch.cancelled', 'generation.succeeded']);

    const made = await makeBatch(key, [chatLine(1, 'sim:tokens=4'), chatLine(2, 'sim:tokens=4')]);
    const [done] = await nested.until(1, eventOf('batch.completed'));
    expect(done!.json).toMatchObject({
      event: 'batch.completed',
      batch: {
        id: made.id,
        endpoint: '/v1/chat/completions',
        status: 'completed',
        requestCounts: { total: 2, completed: 2, failed: 0 },
        creditsCharged: (2 * chargeForTokens(4, 350)) / 1000,
        outputFileId: expect.stringMatching(/^file_/),
      },
    });
    const [flatDone] = await flat.until(1, eventOf('batch.completed'));
    expect(flatDone!.json).toMatchObject({
      event: 'batch.completed',
      batch_id: made.id,
      status: 'completed',
      request_counts: { total: 2, completed: 2, failed: 0 },
      output_file_id: expect.stringMatching(/^file_/),
      created_at: expect.any(String),
    });
    for (const [r, secret] of [
      [done!, n.secret],
      [flatDone!, f.secret],
    ] as const) {
      const parts = String(r.headers['x-service-signature']).split(',');
      const t = parts.find((p) => p.startsWith('t='))!.slice(2);
      expect(parts).toContain(`v1=${createHmac('sha256', secret).update(`${t}.${r.body}`).digest('hex')}`);
      expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
    }

    const cancelled = await makeBatch(key, [chatLine(1, 'sim:delay=20000')]);
    await h.call('POST', `/api/v1/batches/${cancelled.id}/cancel`, { key });
    const [c1] = await nested.until(1, eventOf('batch.cancelled'));
    expect(c1!.json).toMatchObject({ batch: { id: cancelled.id, status: 'cancelled' } });
    await flat.until(1, eventOf('batch.cancelled'));
    // A line is not a generation of its own to the account's webhooks: only the batch's events came.
    await new Promise((r) => setTimeout(r, 500));
    expect(nested.received.map((r) => r.json.event)).toEqual(['batch.completed', 'batch.cancelled']);
    expect(flat.received.map((r) => r.json.event)).toEqual(['batch.completed', 'batch.cancelled']);
    // A validation failure is batch.failed, for those that list it.
    const failedHook = await receivers.start();
    await register(failedHook.url, 'nested', ['batch.failed']);
    const failed = await makeBatch(key, [chatLine(1, 'x'), chatLine(1, 'y')]);
    expect(failed.status).toBe('failed');
    const [bf] = await failedHook.until(1, eventOf('batch.failed'));
    expect(bf!.json).toMatchObject({ batch: { id: failed.id, status: 'failed', requestCounts: { completed: 0 } } });
  });
});

describe('MCP', () => {
  const connect = async (key: string): Promise<Client> => {
    const client = new Client({ name: 'batch-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(mcpUrl, { requestInit: { headers: { Authorization: `Bearer ${key}` } } }),
    );
    clients.push(client);
    return client;
  };
  const call = async (client: Client, name: string, args: Record<string, unknown>) =>
    (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;

  it('generate_batch makes a batch (held once, run line by line), get_batch waits for it, cancel_batch stops another', async () => {
    const { key } = await h.account({ credits: 100 });
    const client = await connect(key);
    const made = await call(client, 'generate_batch', {
      endpoint: '/v1/images/generations',
      requests: [
        { custom_id: 'fox', body: { model: 'flux', prompt: 'a fox' } },
        { custom_id: 'owl', body: { model: 'flux', prompt: 'an owl' } },
      ],
      metadata: { from: 'mcp' },
    });
    expect(made.isError).toBeFalsy();
    const batch = made.structuredContent as unknown as GroupABatch;
    expect(batch).toMatchObject({ status: 'in_progress', creditsHeld: 3, requestCounts: { total: 2 } });
    const waited = await call(client, 'get_batch', { id: batch.id, wait_seconds: 30 });
    expect(waited.structuredContent).toMatchObject({
      status: 'completed',
      requestCounts: { completed: 2 },
      creditsCharged: 3,
    });

    const bad = await call(client, 'generate_batch', {
      endpoint: '/v1/chat/completions',
      requests: [{ custom_id: 'x', body: { model: 'nope', messages: [{ role: 'user', content: 'x' }] } }],
    });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toMatchObject({ status: 'failed', errors: [{ line: 1, param: 'model' }] });

    const slow = (
      await call(client, 'generate_batch', {
        endpoint: '/v1/chat/completions',
        requests: [
          { custom_id: 's', body: { model: 'claude-haiku', messages: [{ role: 'user', content: 'sim:delay=20000' }] } },
        ],
      })
    ).structuredContent as unknown as GroupABatch;
    const cancelled = await call(client, 'cancel_batch', { id: slow.id });
    expect(cancelled.structuredContent).toMatchObject({ id: slow.id });
    expect(await untilEnded(key, slow.id)).toMatchObject({ status: 'cancelled' });
    const poor = await connect((await h.account({ credits: 0 })).key);
    const refused = await call(poor, 'generate_batch', {
      endpoint: '/v1/images/generations',
      requests: [{ custom_id: 'a', body: { model: 'flux', prompt: 'x' } }],
    });
    expect(refused.isError).toBe(true);
    expect(JSON.parse((refused.content[0] as { text: string }).text)).toMatchObject({
      error: { type: 'insufficient_credits' },
    });
  });
});

describe('the dashboard', () => {
  it('lists batches with their counts, cancels one, and downloads the files', async () => {
    const u = await dashboardUser(h, { credits: 100 });
    const { cookie, csrf } = await login(h, u);
    const call = (method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}) =>
      h.app.inject({ method, url, headers: { cookie, ...headers } });
    const made = await makeBatch(u.key, [chatLine(1, 'sim:tokens=2'), chatLine(2, 'sim:fail')]);
    await untilEnded(u.key, made.id);
    const list = c.conforms<{ data: GroupABatch[] }>(
      await call('GET', '/dashboard/api/batches'),
      'get',
      '/dashboard/api/batches',
      200,
    );
    expect(list.data[0]).toMatchObject({
      id: made.id,
      status: 'completed',
      requestCounts: { completed: 1, failed: 1 },
    });
    const output = await call('GET', `/dashboard/api/batches/${made.id}/output`);
    c.conforms(output, 'get', '/dashboard/api/batches/{id}/output', 200);
    expect(JSON.parse(output.body.trim())).toMatchObject({ custom_id: 'c1', response: { status_code: 200 } });
    c.conforms(
      await call('GET', `/dashboard/api/batches/${made.id}/errors`),
      'get',
      '/dashboard/api/batches/{id}/errors',
      200,
    );
    c.conforms(
      await call('GET', `/dashboard/api/batches/${MISSING}/output`),
      'get',
      '/dashboard/api/batches/{id}/output',
      404,
    );
    c.conforms(
      await call('GET', `/dashboard/api/batches/${MISSING}/errors`),
      'get',
      '/dashboard/api/batches/{id}/errors',
      404,
    );
    c.conforms(await call('GET', '/dashboard/api/batches?cursor=x'), 'get', '/dashboard/api/batches', 400);

    const slow = await makeBatch(u.key, [chatLine(1, 'sim:delay=20000')]);
    c.conforms(
      await call('POST', `/dashboard/api/batches/${slow.id}/cancel`),
      'post',
      '/dashboard/api/batches/{id}/cancel',
      403,
    );
    const cancelled = c.conforms<GroupABatch>(
      await call('POST', `/dashboard/api/batches/${slow.id}/cancel`, { 'x-csrf-token': csrf }),
      'post',
      '/dashboard/api/batches/{id}/cancel',
      200,
    );
    expect(['cancelling', 'cancelled']).toContain(cancelled.status);
    c.conforms(
      await call('POST', `/dashboard/api/batches/${made.id}/cancel`, { 'x-csrf-token': csrf }),
      'post',
      '/dashboard/api/batches/{id}/cancel',
      409,
    );
    c.conforms(
      await call('POST', `/dashboard/api/batches/${MISSING}/cancel`, { 'x-csrf-token': csrf }),
      'post',
      '/dashboard/api/batches/{id}/cancel',
      404,
    );
    const page = await call('GET', '/dashboard/batches');
    expect(page.statusCode).toBe(200);
  });
});

describe('every documented answer', () => {
  const dashboardRoutes = (id: string): [Method, string, string][] => [
    ['get', '/dashboard/api/batches', '/dashboard/api/batches'],
    ['post', '/dashboard/api/batches/{id}/cancel', `/dashboard/api/batches/${id}/cancel`],
    ['get', '/dashboard/api/batches/{id}/output', `/dashboard/api/batches/${id}/output`],
    ['get', '/dashboard/api/batches/{id}/errors', `/dashboard/api/batches/${id}/errors`],
  ];

  it('the event stream of a batch that has ended: its last state, then the stream closes', async () => {
    const { key } = await h.account({ credits: 10 });
    const made = await makeBatch(key, [chatLine(1, 'sim:tokens=1')]);
    await untilEnded(key, made.id);
    const res = await h.call('GET', `/api/v1/batches/${made.id}/events`, { key });
    c.conforms(res, 'get', '/api/v1/batches/{id}/events', 200);
    expect(res.body).toMatch(/event: done\ndata: \{"id":"batch_/);
    // Resuming from the id it sent opens nothing new; an id it could not have sent is the client's mistake.
    const lastId = /id: (\S+)\nevent: done/.exec(res.body)?.[1];
    expect(lastId).toMatch(/^9\.1$/);
    for (const bad of ['-1e20', '1e300', '0'.repeat(41)]) {
      const refused = await h.call('GET', `/api/v1/batches/${made.id}/events`, {
        key,
        headers: { 'last-event-id': bad },
      });
      expect(
        c.conforms<{ error: { param: string } }>(refused, 'get', '/api/v1/batches/{id}/events', 400).error.param,
      ).toBe('Last-Event-ID');
    }
  });

  it('the dashboard: 401 without a session, 429 past its limit', async () => {
    for (const [method, path, url] of dashboardRoutes(MISSING)) {
      c.conforms(await h.app.inject({ method: method.toUpperCase() as 'GET', url }), method, path, 401);
    }
    const strict = await productionApi(h, {
      adminToken: 'unused-admin-token-0123456789',
      dashboardLimits: { requestsPerMinute: 1 },
    });
    try {
      const u = await dashboardUser(h, { credits: 1 });
      const { cookie, csrf } = await login(h, u);
      const headers = { cookie, 'x-csrf-token': csrf };
      await strict.inject({ method: 'GET', url: '/dashboard/api/batches', headers });
      for (const [method, path, url] of dashboardRoutes(MISSING)) {
        c.conforms(await strict.inject({ method: method.toUpperCase() as 'GET', url, headers }), method, path, 429);
      }
    } finally {
      await strict.close();
    }
  });

  it('503 when PostgreSQL cannot be reached and 500 when it is broken, without internals', async () => {
    const { key } = await h.account({ credits: 1 });
    const u = await dashboardUser(h, { credits: 1 });
    const { cookie, csrf } = await login(h, u);
    await withBrokenDatabases(h, async (app, status) => {
      for (const [method, path, url] of routesOf(MISSING)) {
        const res = await app.inject({
          method: method.toUpperCase() as 'GET',
          url,
          headers: { authorization: `Bearer ${key}` },
        });
        const { error } = c.conforms<{ error: { message: string } }>(res, method, path, status);
        expect(error.message).not.toMatch(/ECONNREFUSED|relation|nowhere/);
      }
      for (const [method, path, url] of dashboardRoutes(MISSING)) {
        const res = await app.inject({
          method: method.toUpperCase() as 'GET',
          url,
          headers: { cookie, 'x-csrf-token': csrf },
        });
        c.conforms(res, method, path, status);
      }
    });
  });

  it('every documented status of the batch routes of group A and the dashboard was produced above', () => {
    c.expectCoverage('batches.test.ts');
  });
});
