/**
 * What a black-box probe of the service found, each finding replayed the way the probe met it,
 * over real HTTP with the clients people use (node:http for event streams, the official MCP SDK,
 * the operator's admin API): a revoked key that kept reading its streams, `Last-Event-ID` values
 * that answered 500, resumed streams that repeated or skipped events, misspelled money fields that
 * were silently ignored, common passwords accepted at sign-up, and malformed bodies answered as
 * retryable server errors.
 */
import { connect as tcpConnect } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credits, generate } from '../../support/api';
import { linkToken, login } from '../../support/dashboard';
import { startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { readEvents } from '../../support/sse';
import type { ReceivedEvent } from '../../support/sse';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ listen: true, syncWaitMs: 20_000, signup: { startingCredits: 5, chatCap: 0 } });
});
afterAll(async () => {
  await h?.close();
});

interface Shown {
  id: string;
  status: string;
  progress?: number;
  thumbnailUrl?: string | null;
  prompt?: string;
  error?: { type: string; code: number; message: string };
}

/** A second key of the account, as the operator issues it. */
async function secondKey(accountId: string): Promise<string> {
  const res = await h.admin('POST', `/admin/v1/accounts/${accountId}/keys`, { scopes: ['image', 'video'] });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ key: string }>().key;
}

const revoke = async (keyId: string) => {
  const res = await h.admin('DELETE', `/admin/v1/keys/${keyId}`);
  expect(res.statusCode, res.body).toBe(200);
};

describe('a revoked key stops reading', () => {
  it('its account stream ends with an error naming the revocation, and nothing made after the revocation reaches it', async () => {
    const { accountId, key, keyId } = await h.account({ credits: 100 });
    const other = await secondKey(accountId);
    let revokedAt = -1;
    let after: string | undefined;
    const stream = readEvents<Shown>(`${h.baseUrl}/api/v1/events`, key, {
      ms: 60_000,
      onEvent: async (e, events) => {
        // The first generation is seen live; then the operator revokes the key, and another key of
        // the account makes a generation at once, long before any periodic check could run.
        if (revokedAt === -1 && e.event === 'done') {
          revokedAt = events.length;
          await revoke(keyId);
          const made = await generate(h, other, { kind: 'image', model: 'flux', prompt: 'after the revocation' });
          after = made.body.generation.id;
        }
      },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await generate(h, other, { kind: 'image', model: 'flux', prompt: 'before the revocation' });
    const { events, closed, status } = await stream;
    expect(status).toBe(200);
    expect(closed, JSON.stringify(events)).toBe(true);
    expect(after).toBeDefined();
    const last = events.at(-1)!;
    expect(last.event).toBe('error');
    expect(last.data.error).toMatchObject({ type: 'authentication_error', code: 401 });
    expect(last.data.error!.message).toMatch(/revoked/);
    // Between the revocation and the end: nothing at all, the generation made after it least of all.
    expect(events.slice(revokedAt, -1)).toEqual([]);
    expect(events.some((e) => e.data.id === after)).toBe(false);
    // And the key opens no new stream.
    expect((await readEvents(`${h.baseUrl}/api/v1/events`, key, { ms: 5_000 })).status).toBe(401);
  });

  it('a quiet stream of one generation ends too, by the periodic check, with nothing sent after the error', async () => {
    const { accountId, key, keyId } = await h.account({ credits: 100 });
    const other = await secondKey(accountId);
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a slow tide sim:delay=30000' });
    const id = video.body.generation.id;
    let revoked = false;
    const stream = await readEvents<Shown>(`${h.baseUrl}/api/v1/generations/${id}/events`, key, {
      ms: 60_000,
      onEvent: async () => {
        if (revoked) return;
        revoked = true;
        await revoke(keyId);
      },
    });
    expect(stream.closed).toBe(true);
    expect(stream.events.at(-1)).toMatchObject({ event: 'error', data: { error: { code: 401 } } });
    expect(stream.events.filter((e) => e.event === 'done')).toEqual([]);
    await h.call('POST', `/api/v1/generations/${id}/cancel`, { key: other });
  });

  it('an MCP call waiting for its generation (the official SDK) ends with an error naming the revocation', async () => {
    const { accountId, key, keyId } = await h.account({ credits: 100 });
    const other = await secondKey(accountId);
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a long shot sim:delay=30000' });
    const client = new Client({ name: 'probe', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/api/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const call = client.callTool(
        { name: 'get_generation', arguments: { id: video.body.generation.id, wait_seconds: 60 } },
        undefined,
        { timeout: 90_000, onprogress: () => undefined },
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      await revoke(keyId);
      await expect(call).rejects.toThrow(/revoked/);
    } finally {
      await client.close();
    }
    await h.call('POST', `/api/v1/generations/${video.body.generation.id}/cancel`, { key: other });
  });

  it('a dashboard page’s stream ends with `logout` once its session is logged out elsewhere', async () => {
    const { accountId } = await h.account({ credits: 10 });
    const email = `stream-${Date.now()}@example.com`;
    const made = await h.admin('POST', '/admin/v1/users', { accountId, email });
    const token = linkToken(made.json<{ setPasswordUrl: string }>().setPasswordUrl);
    const password = 'tide pools at low water';
    expect(
      (await h.app.inject({ method: 'POST', url: '/dashboard/api/set-password', payload: { token, password } }))
        .statusCode,
    ).toBe(200);
    const { cookie, csrf } = await login(h, { email, password });
    const events: string[] = [];
    const res = await fetch(`${h.baseUrl}/dashboard/api/events`, { headers: { cookie } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const out = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/logout',
      headers: { cookie, 'x-csrf-token': csrf },
    });
    expect(out.statusCode).toBe(200);
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    for (const m of text.matchAll(/^event: (\w+)$/gm)) events.push(m[1]!);
    expect(events.at(-1)).toBe('logout');
    expect(text).toMatch(/"reason":"The session has ended/);
  });
});

describe('Last-Event-ID', () => {
  // Anything not of the stream's own format; the last two of each are the other stream's ids.
  const BAD = ['-1e20', '1e300', '9e15', '1'.repeat(30), 'x'.repeat(41), 'abc', '2.5x', '3.0'];
  const NOT_ONE_GENERATION = [...BAD, '4', '2.5', '41-3'];
  const NOT_AN_ACCOUNT = [...BAD, '12-', '2.400'];

  it('anything but an id the stream sends is a 400 in group A’s shape naming the header, never a 500', async () => {
    const { key } = await h.account({ credits: 10 });
    const image = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a buoy' });
    for (const [url, ids] of [
      [`/api/v1/generations/${image.body.generation.id}/events`, NOT_ONE_GENERATION],
      ['/api/v1/events', NOT_AN_ACCOUNT],
    ] as const) {
      for (const id of ids) {
        const res = await readEvents(`${h.baseUrl}${url}`, key, { lastEventId: id, ms: 5_000 });
        expect(res.status, `${url} ${id}: ${res.body}`).toBe(400);
        expect(JSON.parse(res.body!), id).toMatchObject({
          error: { type: 'invalid_request_error', code: 400, param: 'Last-Event-ID' },
        });
      }
    }
  });

  it('an account stream’s id this account never issued counts as none: the stream starts from now', async () => {
    const { key } = await h.account({ credits: 10 });
    await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a rope' });
    // A number far past the account's changes (an id of the earlier time-based format looks like this).
    const stream = await readEvents(`${h.baseUrl}/api/v1/events`, key, { lastEventId: '1733000000000', ms: 1_500 });
    expect(stream.status).toBe(200);
    expect(stream.events).toEqual([]);
  });
});

describe('resuming a stream', () => {
  it('one generation: ids are unique and rise, and resuming after any of them sends only what is newer', async () => {
    const { key } = await h.account({ credits: 200 });
    const video = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'a harbour sim:delay=6000',
      seconds: 5,
    });
    const url = `${h.baseUrl}/api/v1/generations/${video.body.generation.id}/events`;
    // Cut the stream after each event, and resume after it, as EventSource does after a lost connection.
    const all: ReceivedEvent<Shown>[] = [];
    for (let last: string | undefined; ;) {
      const part = await readEvents<Shown>(url, key, {
        ...(last === undefined ? {} : { lastEventId: last }),
        until: (events) => events.length >= 1,
        ms: 30_000,
      });
      expect(part.status).toBe(200);
      all.push(...part.events);
      if (part.events.length === 0 || part.events.at(-1)!.event === 'done') break;
      last = part.events.at(-1)!.id;
    }
    const ids = all.map((e) => e.id!);
    // Unique, and rising: a preview has an id of its own, and no event ever came twice.
    expect(new Set(ids).size, ids.join(' ')).toBe(ids.length);
    expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((a, b) => a - b));
    expect(all.filter((e) => e.event === 'preview').length).toBeLessThanOrEqual(1);
    const progress = all.filter((e) => e.event === 'progress').map((e) => e.data.progress!);
    expect(progress).toEqual([...new Set(progress)].sort((a, b) => a - b));
    expect(all.at(-1)).toMatchObject({ event: 'done', id: '3', data: { status: 'succeeded' } });
  }, 60_000);

  it('the account: after the last id received comes exactly what changed while away, nothing the client had', async () => {
    const { key } = await h.account({ credits: 200 });
    // Two images while a stream is open, then the stream is cut.
    const made: string[] = [];
    const open = readEvents<Shown>(`${h.baseUrl}/api/v1/events`, key, {
      until: (events) =>
        made.length === 2 && made.every((id) => events.some((e) => e.data.id === id && e.event === 'done')),
      ms: 30_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const p of ['one', 'two'])
      made.push((await generate(h, key, { kind: 'image', model: 'flux', prompt: p })).body.generation.id);
    const before = await open;
    const lastId = before.events.at(-1)!.id!;
    // While away: two more, one of them failing.
    const away = [
      (await generate(h, key, { kind: 'image', model: 'flux', prompt: 'three' })).body.generation.id,
      (await generate(h, key, { kind: 'image', model: 'flux', prompt: 'four sim:fail' })).body.generation.id,
    ];
    const resumed = await readEvents<Shown>(`${h.baseUrl}/api/v1/events`, key, { lastEventId: lastId, ms: 2_000 });
    expect(resumed.status).toBe(200);
    // Each changed generation once, as it is now, in the order of its last change; none of the first two.
    expect(resumed.events.map((e) => [e.data.id, e.event, e.data.status])).toEqual([
      [away[0], 'done', 'succeeded'],
      [away[1], 'done', 'failed'],
    ]);
    const ids = [...before.events, ...resumed.events].filter((e) => e.event !== 'progress').map((e) => e.id!);
    expect(new Set(ids).size).toBe(ids.length);
    // Resuming after the last id again: nothing more.
    const again = await readEvents(`${h.baseUrl}/api/v1/events`, key, {
      lastEventId: resumed.events.at(-1)!.id!,
      ms: 1_500,
    });
    expect(again.events).toEqual([]);
  }, 60_000);
});

describe('fields our own doors do not know', () => {
  it('group C refuses max_credits and deadline_seconds (its fields are maxCredits, deadlineSeconds) with a 400 naming them; nothing runs or is charged', async () => {
    const { key } = await h.account({ credits: 50 });
    for (const [field, value] of [
      ['max_credits', 2],
      ['deadline_seconds', 2],
    ] as const) {
      const res = await h.call('POST', '/api/generate', {
        key,
        body: { kind: 'video', model: 'kling', prompt: 'waves', [field]: value },
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 400, param: field } });
      expect(res.json<{ error: { message: string } }>().error.message).toContain(field);
    }
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
    expect((await h.call('GET', '/api/v1/generations', { key })).json<{ data: unknown[] }>().data).toEqual([]);
    // The spec's `resolution` stays accepted and ignored; the door's own spelling caps the request.
    const capped = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'video', model: 'kling', prompt: 'waves', resolution: '4k', maxCredits: 2 },
    });
    expect(capped.statusCode, capped.body).toBe(402);
    expect(capped.json()).toMatchObject({ error: { type: 'max_credits_exceeded' } });
  });

  it('group A’s generate and remix, and an MCP tool’s arguments, refuse an unknown field by name', async () => {
    const { key } = await h.account({ credits: 50 });
    const a = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a kite', maxCredits: 1 },
    });
    expect(a.statusCode).toBe(400);
    expect(a.json()).toMatchObject({ error: { param: 'maxCredits' } });
    const remix = await h.call('POST', `/api/v1/generations/gen_${'0'.repeat(26)}/remix`, {
      key,
      body: { prompt: 'again', seconds: 10 },
    });
    expect(remix.statusCode).toBe(400);
    expect(remix.json()).toMatchObject({ error: { param: 'seconds' } });

    const client = new Client({ name: 'probe', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${h.baseUrl}/api/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
      }),
    );
    try {
      const result = await client.callTool({
        name: 'generate_image',
        arguments: { model: 'flux', prompt: 'a kite', maxCredits: 1 },
      });
      expect(result.isError).toBe(true);
      const body = JSON.parse((result.content as { text: string }[])[0]!.text) as { error: { param: string } };
      expect(body.error).toMatchObject({ type: 'invalid_request_error', param: 'maxCredits' });
    } finally {
      await client.close();
    }
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
  });
});

describe('passwords', () => {
  const COMMON = ['password123', '1234567890', 'qwertyuiop', 'Password123'];

  it('sign-up refuses common passwords and the address itself, with a clear message', async () => {
    // An address per attempt: sign-up attempts are limited per address, like logins.
    const address = (i: number) => `probe-${i}-${Date.now()}@example.com`;
    const attempts = [...COMMON.map((p, i) => [address(i), p]), [address(9), address(9)]];
    const own = address(8);
    attempts.push([own, own.split('@')[0]!]);
    for (const [email, password] of attempts) {
      const res = await h.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email, password } });
      expect(res.statusCode, `${password}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'password' } });
      expect(res.json<{ error: { message: string } }>().error.message).toMatch(
        password === email || email!.startsWith(password!) ? /email address/ : /commonly used/,
      );
    }
    // A password of its own is taken.
    const fine = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/signup',
      payload: { email: address(7), password: 'lanterns over the harbour' },
    });
    expect(fine.statusCode, fine.body).toBe(202);
  });

  it('a set-password link refuses them too and stays unspent; a password set before the rule still logs in', async () => {
    const { accountId } = await h.account({ credits: 1 });
    const email = `reset-${Date.now()}@example.com`;
    const made = await h.admin('POST', '/admin/v1/users', { accountId, email });
    const token = linkToken(made.json<{ setPasswordUrl: string }>().setPasswordUrl);
    const set = (password: string) =>
      h.app.inject({ method: 'POST', url: '/dashboard/api/set-password', payload: { token, password } });
    for (const password of [...COMMON, email, email.split('@')[0]!]) {
      const res = await set(password);
      expect(res.statusCode, `${password}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: { param: 'password' } });
    }
    expect((await set('a harbour light at dusk')).statusCode).toBe(200);
    // A password chosen before the rule (written as the earlier code stored it) keeps working.
    const { hashPassword } = await import('../../../core/accounts/passwords');
    await h.pool.query('UPDATE users SET password_hash = $2 WHERE email = $1', [
      email,
      await hashPassword('password123'),
    ]);
    await login(h, { email, password: 'password123' });
  });
});

describe('malformed bodies', () => {
  const V1_POSTS = [
    '/v1/chat/completions',
    '/v1/responses',
    '/v1/responses/resp_0/cancel',
    '/v1/images/generations',
    '/v1/video/generations',
    `/v1/video/generations/gen_${'0'.repeat(26)}/remix`,
    '/v1/videos',
    `/v1/videos/gen_${'0'.repeat(26)}/remix`,
  ];

  it('multipart/form-data without a boundary, or not multipart at all, is a 400 on every /v1 POST, never a retryable 500', async () => {
    const { key } = await h.account({ credits: 10 });
    for (const url of V1_POSTS) {
      for (const [type, payload] of [
        ['multipart/form-data', 'model=sora-2&prompt=x'],
        ['multipart/form-data; boundary=xyz', '{"model":"sora-2","prompt":"x"}'],
      ] as const) {
        const res = await h.call('POST', url, { key, headers: { 'content-type': type }, body: payload });
        expect(res.statusCode, `${url} ${type}: ${res.body}`).toBe(400);
        expect(res.json(), url).toMatchObject({ error: { type: 'invalid_request_error', code: 400 } });
      }
    }
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
  });

  it('credit amounts out of range are refused by validation (400), before any conversion could fail', async () => {
    const { accountId } = await h.account({ credits: 10 });
    for (const amount of [1e13, -1e20, 1e308, -1]) {
      const res = await h.admin('POST', `/admin/v1/accounts/${accountId}/credits`, { credits: amount });
      expect(res.statusCode, `${amount}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'credits' } });
    }
  });

  it('addresses longer than email allows are refused when a user is invited', async () => {
    const { accountId } = await h.account({ credits: 1 });
    for (const email of [`${'a'.repeat(65)}@example.com`, `ada@${'b'.repeat(64)}.example.com`]) {
      const res = await h.admin('POST', '/admin/v1/users', { accountId, email });
      expect(res.statusCode, `${email}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: { param: 'email' } });
    }
    const fits = await h.admin('POST', '/admin/v1/users', {
      accountId,
      email: `${'a'.repeat(64)}@${'b'.repeat(63)}.example.com`,
    });
    expect(fits.statusCode, fits.body).toBe(201);
  });

  it('a 48 KB request line is a 431 in the one error shape, with a request id', async () => {
    const url = new URL(h.baseUrl!);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = tcpConnect(Number(url.port), url.hostname, () => {
        socket.write(`GET /api/v1/models?q=${'x'.repeat(48 * 1024)} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (d) => (text += d.toString('utf8')));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    const [head, body] = raw.split('\r\n\r\n') as [string, string];
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/x-request-id: req_[0-9a-f]{24}/i);
    expect(JSON.parse(body)).toMatchObject({ error: { type: 'invalid_request_error', code: 431 } });
  });
});
