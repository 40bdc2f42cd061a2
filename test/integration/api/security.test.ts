/**
 * The black-box probes' findings, each as the attack a key holder would make, now doing no harm: output files
 * cannot run as pages of ours, every framework error answers in its door's shape, a webhook aimed
 * at this host's own network cannot read what it answers, secrets stay out of the log, and webhook
 * management needs its own scope.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAccount, insertApiKey, listApiKeys } from '../../../core/db/accounts';
import { migrate } from '../../../core/db/migrate';
import { generateApiKey, hashApiKey } from '../../../core/accounts/api-keys';
import type { GenerationRecord } from '../../support/api';
import { login, userOf } from '../../support/dashboard';
import { ADMIN_TOKEN, eventually, startHarness, withScratchDatabase } from '../../support/harness';
import type { Harness } from '../../support/harness';

let h: Harness;
const logLines: string[] = [];

beforeAll(async () => {
  h = await startHarness({
    webhooks: { relayPollMs: 100, retryScheduleMs: [60_000] },
    logger: { level: 'info', stream: { write: (line: string) => void logLines.push(line) } },
  });
});
afterAll(async () => {
  await h?.close();
});

const fileUrlOf = (outputUrl: string) => {
  const u = new URL(outputUrl);
  return `${u.pathname}${u.search}`;
};

async function image(key: string): Promise<GenerationRecord> {
  const res = await h.call('POST', '/api/v1/generate', {
    key,
    body: { kind: 'image', model: 'flux', prompt: 'a lighthouse' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<GenerationRecord>();
}

describe('/files/* can never run as a page of ours', () => {
  it('a file and a refused link both say nosniff and sandbox', async () => {
    const { key } = await h.account({ credits: 10 });
    const url = fileUrlOf((await image(key)).outputUrl);
    const ok = await h.app.inject({ method: 'GET', url });
    expect(ok.statusCode).toBe(200);
    const bad = await h.app.inject({ method: 'GET', url: url.replace(/signature=[^&]+/, 'signature=forged') });
    expect(bad.statusCode).toBe(404);
    for (const res of [ok, bad]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['content-security-policy']).toBe('sandbox');
    }
  });
});

describe('every framework error answers in its door’s shape', () => {
  const LONG = 'x'.repeat(150);
  const HUGE = JSON.stringify({ prompt: 'a'.repeat(9 * 1024 * 1024) });

  interface Door {
    name: string;
    headers: () => Promise<Record<string, string>>;
    /** A route with a path parameter (none on MCP). */
    param?: { method: 'GET' | 'DELETE'; url: (id: string) => string };
    post: string;
    unknown: string;
    /** A method the post route does not answer. */
    other: 'PUT' | 'GET';
  }

  let doors: Door[];
  beforeAll(async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const session = await login(h, await userOf(h, accountId));
    const bearer = async () => ({ authorization: `Bearer ${key}` });
    doors = [
      {
        name: 'A',
        headers: bearer,
        param: { method: 'GET', url: (id) => `/api/v1/generations/${id}` },
        post: '/api/v1/generate',
        unknown: '/api/v1/nothing-here',
        other: 'PUT',
      },
      {
        name: 'B',
        headers: bearer,
        param: { method: 'GET', url: (id) => `/v1/videos/${id}` },
        post: '/v1/chat/completions',
        unknown: '/v1/nothing-here',
        other: 'PUT',
      },
      {
        name: 'C',
        headers: bearer,
        param: { method: 'GET', url: (id) => `/api/generate/${id}` },
        post: '/api/generate',
        unknown: '/api/generate/x/nothing-here',
        other: 'PUT',
      },
      {
        name: 'MCP',
        headers: async () => ({ ...(await bearer()), accept: 'application/json, text/event-stream' }),
        post: '/api/mcp',
        unknown: '/api/mcp/nothing-here',
        other: 'PUT',
      },
      {
        name: 'dashboard',
        headers: async () => ({ cookie: session.cookie, 'x-csrf-token': session.csrf }),
        param: { method: 'GET', url: (id) => `/dashboard/api/webhooks/${id}` },
        post: '/dashboard/api/quote',
        unknown: '/dashboard/api/nothing-here',
        other: 'PUT',
      },
      {
        name: 'admin',
        headers: async () => ({ authorization: `Bearer ${ADMIN_TOKEN}` }),
        param: { method: 'DELETE', url: (id) => `/admin/v1/keys/${id}` },
        post: '/admin/v1/accounts',
        unknown: '/admin/v1/nothing-here',
        other: 'GET',
      },
    ];
  });

  function expectDoorShape(label: string, res: LightMyRequestResponse, status: number): void {
    expect(res.statusCode, `${label}: ${res.body.slice(0, 300)}`).toBe(status);
    expect(res.json(), label).toMatchObject({
      error: { message: expect.any(String), type: expect.any(String), code: status },
    });
    expect(res.body, label).not.toMatch(/FST_|"statusCode"/);
    expect(res.headers['x-request-id'], label).toBeTruthy();
  }

  it('param over 100 characters, body too large, wrong content type, malformed JSON, unknown route, method not allowed: on A, B, C, MCP, the dashboard API and admin', async () => {
    for (const door of doors) {
      const headers = await door.headers();
      const post = (payload: string, contentType = 'application/json') =>
        h.app.inject({ method: 'POST', url: door.post, headers: { ...headers, 'content-type': contentType }, payload });
      if (door.param) {
        const res = await h.app.inject({ method: door.param.method, url: door.param.url(LONG), headers });
        expectDoorShape(`${door.name} long param`, res, 400);
        expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
      }
      expectDoorShape(`${door.name} body too large`, await post(HUGE), 413);
      expectDoorShape(`${door.name} content type`, await post('hello', 'text/plain'), 400);
      expectDoorShape(`${door.name} malformed JSON`, await post('{"prompt":'), 400);
      expectDoorShape(
        `${door.name} unknown route`,
        await h.app.inject({ method: 'GET', url: door.unknown, headers }),
        404,
      );
      const other = await h.app.inject({ method: door.other, url: door.post, headers });
      expectDoorShape(`${door.name} method not allowed`, other, 405);
      expect(other.headers.allow, door.name).toMatch(/POST/);
    }
    // A malformed percent-encoding is the router's own error too.
    expectDoorShape(
      'bad URL',
      await h.app.inject({ method: 'GET', url: '/api/v1/generations/%E0%A4%A', headers: await doors[0]!.headers() }),
      400,
    );
  });
});

describe('a webhook aimed at this host’s own network cannot read what it answers', () => {
  let internal: Server;
  let internalUrl: string;
  const SECRET_BODY = 'internal-service-says-db-password-hunter2';

  beforeAll(async () => {
    internal = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(SECRET_BODY));
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    internalUrl = `http://127.0.0.1:${(internal.address() as AddressInfo).port}/admin`;
  });
  afterAll(() => new Promise<void>((resolve) => internal.close(() => resolve())));

  it('development mode delivers to loopback, but the delivery log keeps its status, never its body', async () => {
    const { key } = await h.account({ credits: 10 });
    const created = await h.call('POST', '/api/v1/webhooks', { key, body: { url: internalUrl } });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json<{ id: string }>().id;
    expect((await h.call('POST', `/api/v1/webhooks/${id}/test`, { key })).statusCode).toBe(202);
    const log = await eventually(async () => {
      const res = await h.call('GET', `/api/v1/webhooks/${id}/deliveries`, { key });
      const page = res.json<{
        data: { status: string; attempts: { statusCode: number | null; response: string | null }[] }[];
      }>();
      return page.data[0]?.status === 'succeeded' ? res : undefined;
    });
    const [delivery] = log.json<{ data: { attempts: { statusCode: number | null; response: string | null }[] }[] }>()
      .data;
    expect(delivery!.attempts).toEqual([expect.objectContaining({ statusCode: 200, response: null })]);
    expect(log.body).not.toContain(SECRET_BODY);
  });
});

describe('secrets stay out of the log', () => {
  it('signatures, keys in query strings and Authorization headers are redacted in every line', async () => {
    const { key } = await h.account({ credits: 10 });
    const fileUrl = fileUrlOf((await image(key)).outputUrl);
    const signature = new URL(fileUrl, 'http://x').searchParams.get('signature')!;
    expect(signature.length).toBeGreaterThan(10);
    const queryKey = 'gsk_querykeyvalue0123456789abcdef';
    const queryApiKey = 'sk-apikeyvalue-0123456789';
    const before = logLines.length;

    await h.app.inject({ method: 'GET', url: fileUrl });
    await h.app.inject({
      method: 'GET',
      url: `/api/v1/balance?key=${queryKey}&api_key=${queryApiKey}`,
      headers: { authorization: `Bearer ${key}` },
    });
    await h.app.inject({
      method: 'GET',
      url: `/api/v1/nothing-here?api_key=${queryApiKey}`,
      headers: { authorization: `Bearer ${key}` },
    });
    // Anything that logs headers or a URL of its own goes through the same redaction.
    h.app.log.info(
      { headers: { authorization: `Bearer ${key}` }, url: `https://example.com/x?signature=${signature}` },
      'a line with headers',
    );

    const written = logLines.slice(before).join('');
    expect(written).toMatch(/incoming request/);
    expect(written).toContain('signature=[redacted]');
    expect(written).toContain('api_key=[redacted]');
    for (const secret of [signature, key, queryKey, queryApiKey]) expect(written).not.toContain(secret);
  });
});

describe('webhook management needs the webhooks scope', () => {
  it('a chat-only key can neither register nor list endpoints; a key with the scope can', async () => {
    const { accountId } = await h.account({ credits: 10, scopes: ['chat'] });
    const chatOnly = (await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['chat'] })).json<{
      key: string;
    }>().key;
    const refused = await h.call('POST', '/api/v1/webhooks', {
      key: chatOnly,
      body: { url: 'https://example.com/steal' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({
      error: { type: 'permission_error', code: 403, message: expect.stringMatching(/'webhooks' scope/) },
    });
    expect((await h.call('GET', '/api/v1/webhooks', { key: chatOnly })).statusCode).toBe(403);

    const created = await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['chat', 'webhooks'] });
    expect(created.statusCode).toBe(201);
    const manager = created.json<{ key: string }>().key;
    expect((await h.call('GET', '/api/v1/webhooks', { key: manager })).json()).toEqual({ data: [] });
  });

  it('the dashboard offers the scope, creates keys with it and shows it; its session manages webhooks', async () => {
    const { accountId } = await h.account({ credits: 10, scopes: ['chat'] });
    const s = await login(h, await userOf(h, accountId));
    const headers = { cookie: s.cookie, 'x-csrf-token': s.csrf };
    const words = await h.app.inject({ method: 'GET', url: '/dashboard/api/vocabulary', headers });
    expect(words.json<{ scopes: string[] }>().scopes).toEqual([
      'image',
      'video',
      'chat',
      'upscale',
      'webhooks',
      'customers',
      'audit',
    ]);
    const key = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/keys',
      headers,
      payload: { scopes: ['chat', 'webhooks'] },
    });
    expect(key.statusCode, key.body).toBe(201);
    const listed = (await h.app.inject({ method: 'GET', url: '/dashboard/api/keys', headers })).json<{
      data: { scopes: string[] }[];
    }>().data;
    expect(listed.map((k) => k.scopes)).toContainEqual(['chat', 'webhooks']);
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/api/webhooks', headers })).statusCode).toBe(200);
  });

  it('migration 009 grants the scope to every key that existed before it', async () => {
    await withScratchDatabase(async (pool) => {
      // The scratch database is migrated; a key made before 009 is one 009 has not yet seen.
      await insertAccount(pool, { id: 'acct_old', plan: 'free', chatCap: 0 });
      await insertApiKey(pool, {
        id: 'key_old',
        accountId: 'acct_old',
        keyHash: hashApiKey(generateApiKey()),
        keyHint: 'gsk_…',
        scopes: ['chat'],
        models: null,
      });
      await pool.query('DELETE FROM schema_migrations WHERE version = 9');
      expect(await migrate(pool)).toContain('009_webhooks_scope.sql');
      expect((await listApiKeys(pool, 'acct_old')).map((k) => k.scopes)).toEqual([['chat', 'webhooks']]);
    });
  });
});
