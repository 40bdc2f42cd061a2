/**
 * The dashboard's rules at the HTTP level (app.inject): users and their one-time links, login and
 * its rate limits, the session cookie, CSRF, group C with a session, keys, quotes, pages, and every
 * documented answer of /dashboard/api and POST /admin/v1/users.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_RATE_LIMITS } from '../../../../core/plans';
import { hashToken } from '../../../../core/accounts/passwords';
import { SCOPES } from '../../../../core/accounts/api-keys';
import { GENERATION_KINDS, GENERATION_STATUSES } from '../../../../core/vocabulary';
import { freePort } from '../../../../runtime/process';
import { dashboardUser, linkToken, login, userOf } from '../../../support/dashboard';
import { DASHBOARD_ROUTE_PERMISSIONS } from '../../../../api/dashboard/permissions';
import { mayDo, ROLE_PERMISSIONS, ROLES } from '../../../../core/roles';
import type { DashboardUser } from '../../../support/dashboard';
import { ADMIN_TOKEN, startHarness, withScratchDatabase } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { createConformance, loadDocument, servedRoutes } from '../../../support/openapi';
import type { Method } from '../../../support/openapi';

let h: Harness;
let c: ReturnType<typeof createConformance>;
const LIMITS = { requestsPerMinute: 150, loginsPerEmail: 5, loginsPerIp: 1_000 };
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000, dashboardLimits: LIMITS });
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await h?.close();
});

type Session = { cookie: string; csrf: string };
const MISSING_GENERATION = `gen_${'0'.repeat(26)}`;

/** A call with a session: its cookie, and its CSRF token unless told otherwise. */
function as(
  s: Session | undefined,
  method: Method,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
  app: FastifyInstance = h.app,
) {
  return app.inject({
    method: method.toUpperCase() as 'GET',
    url,
    headers: { ...(s ? { cookie: s.cookie, 'x-csrf-token': s.csrf } : {}), ...headers },
    ...(body === undefined ? {} : { payload: body as object }),
  });
}
const withoutCsrf = (s: Session): Session => ({ cookie: s.cookie, csrf: '' });

describe('users and their one-time links (admin API)', () => {
  it('creates a user with a link; the same account again gets a new link; another account is 409', async () => {
    const { accountId } = await h.account({ credits: 1 });
    const other = await h.account({ credits: 1 });
    const email = `Ada.${Date.now()}@Example.com`;
    const first = c.conforms<{ id: string; setPasswordUrl: string; expiresAt: string }>(
      await h.admin('POST', '/admin/v1/users', { accountId, email }),
      'post',
      '/admin/v1/users',
      201,
    );
    expect(first.id).toMatch(/^usr_/);
    expect(first.setPasswordUrl).toMatch(/^http:\/\/localhost(:\d+)?\/dashboard\/set-password#token=[\w-]{43}$/);
    expect(Date.parse(first.expiresAt) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    // Only the hash of the token is kept.
    const stored = await h.pool.query<{ token_hash: Buffer }>(
      'SELECT token_hash FROM password_links WHERE user_id = $1',
      [first.id],
    );
    expect(stored.rows[0]!.token_hash.equals(hashToken(linkToken(first.setPasswordUrl)))).toBe(true);
    expect(JSON.stringify(stored.rows)).not.toContain(linkToken(first.setPasswordUrl));

    const again = c.conforms<{ id: string; setPasswordUrl: string }>(
      await h.admin('POST', '/admin/v1/users', { accountId, email: email.toLowerCase() }),
      'post',
      '/admin/v1/users',
      200,
    );
    expect(again.id).toBe(first.id);
    expect(again.setPasswordUrl).not.toBe(first.setPasswordUrl);
    expect(
      c.conforms(
        await h.admin('POST', '/admin/v1/users', { accountId: other.accountId, email }),
        'post',
        '/admin/v1/users',
        409,
      ),
    ).toMatchObject({ error: { type: 'email_taken', param: 'email' } });
    expect(
      c.conforms(
        await h.admin('POST', '/admin/v1/users', { accountId: 'acct_nope', email: 'x@example.com' }),
        'post',
        '/admin/v1/users',
        404,
      ),
    ).toMatchObject({ error: { type: 'not_found' } });
    expect(
      c.conforms(
        await h.admin('POST', '/admin/v1/users', { accountId, email: 'not an email' }),
        'post',
        '/admin/v1/users',
        400,
      ),
    ).toMatchObject({ error: { param: 'email' } });
    c.conforms(
      await h.app.inject({ method: 'POST', url: '/admin/v1/users', payload: { accountId, email } }),
      'post',
      '/admin/v1/users',
      401,
    );
  });

  it('a link sets the password once; a used, an expired or an unknown link is refused', async () => {
    const { accountId } = await h.account({ credits: 1 });
    const email = `grace.${Date.now()}@example.com`;
    const { setPasswordUrl, id } = (await h.admin('POST', '/admin/v1/users', { accountId, email })).json<{
      id: string;
      setPasswordUrl: string;
    }>();
    const token = linkToken(setPasswordUrl);
    const set = (t: string, password = 'a long enough password') =>
      h.app.inject({ method: 'POST', url: '/dashboard/api/set-password', payload: { token: t, password } });

    expect(c.conforms(await set(token, 'short'), 'post', '/dashboard/api/set-password', 400)).toMatchObject({
      error: { param: 'password' },
    });
    expect(c.conforms(await set(token), 'post', '/dashboard/api/set-password', 200)).toEqual({ email });
    expect(c.conforms(await set(token), 'post', '/dashboard/api/set-password', 400)).toMatchObject({
      error: { param: 'token', message: expect.stringMatching(/already been used/) },
    });
    expect((await set('x'.repeat(43))).json()).toMatchObject({
      error: { param: 'token', message: 'This link is not valid.' },
    });

    const stored = await h.pool.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [id]);
    expect(stored.rows[0]!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);

    const fresh = (await h.admin('POST', '/admin/v1/users', { accountId, email })).json<{ setPasswordUrl: string }>();
    await h.pool.query(`UPDATE password_links SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [
      hashToken(linkToken(fresh.setPasswordUrl)),
    ]);
    expect((await set(linkToken(fresh.setPasswordUrl))).json()).toMatchObject({
      error: { type: 'invalid_request_error', message: expect.stringMatching(/expired/) },
    });
  });
});

describe('login, the cookie and logout', () => {
  let user: DashboardUser;
  beforeAll(async () => {
    user = await dashboardUser(h);
  });

  it('sets an HttpOnly, SameSite=Lax, Secure cookie holding a token stored only as a hash', async () => {
    const res = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: user.email.toUpperCase(), password: user.password },
    });
    const body = c.conforms<{ csrfToken: string; user: { email: string } }>(res, 'post', '/dashboard/api/login', 200);
    expect(body.user.email).toBe(user.email);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^gensvc_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800; Secure$/);
    const token = cookie.split(';')[0]!.split('=')[1]!;
    const rows = await h.pool.query<{ token_hash: Buffer; expires_at: Date }>(
      'SELECT token_hash, expires_at FROM sessions WHERE user_id = $1',
      [user.userId],
    );
    expect(rows.rows.some((r) => r.token_hash.equals(hashToken(token)))).toBe(true);
    expect(JSON.stringify(rows.rows)).not.toContain(token);
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('refuses a wrong password and an unknown email alike, and limits attempts per email', async () => {
    const target = await dashboardUser(h);
    const wrong = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: target.email, password: 'not the password' },
    });
    expect(c.conforms(wrong, 'post', '/dashboard/api/login', 401)).toMatchObject({
      error: { type: 'unauthorized', message: 'The email or the password is wrong.' },
    });
    const unknown = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: 'nobody@example.com', password: 'whatever it is' },
    });
    expect(unknown.json()).toEqual(wrong.json());
    c.conforms(
      await h.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: target.email } }),
      'post',
      '/dashboard/api/login',
      400,
    );
    for (let i = 1; i < LIMITS.loginsPerEmail; i++) {
      expect(
        (
          await h.app.inject({
            method: 'POST',
            url: '/dashboard/api/login',
            payload: { email: target.email, password: `guess ${i}` },
          })
        ).statusCode,
      ).toBe(401);
    }
    // The window is full: even the right password waits.
    const limited = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      payload: { email: target.email, password: target.password },
    });
    expect(c.conforms(limited, 'post', '/dashboard/api/login', 429)).toMatchObject({
      error: { type: 'rate_limit_error' },
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another email from the same address is not held back by it.
    await login(h, user);
  });

  it('limits attempts per client address too', async () => {
    const strict = await startHarness({ worker: false, dashboardLimits: { loginsPerIp: 3, loginsPerEmail: 100 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push(
          (
            await strict.app.inject({
              method: 'POST',
              url: '/dashboard/api/login',
              payload: { email: `someone${i}@example.com`, password: 'a guess of a password' },
            })
          ).statusCode,
        );
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
      c.conforms(
        await strict.app.inject({
          method: 'POST',
          url: '/dashboard/api/set-password',
          payload: { token: 'x', password: 'whatever it may be' },
        }),
        'post',
        '/dashboard/api/set-password',
        429,
      );
    } finally {
      await strict.close();
    }
  });

  it('logout ends the session: the old cookie is refused by the dashboard and group C', async () => {
    const s = await login(h, user);
    expect(c.conforms(await as(s, 'get', '/api/credits'), 'get', '/api/credits', 200)).toMatchObject({
      balance: 1_000,
    });
    const out = await as(s, 'post', '/dashboard/api/logout');
    c.conforms(out, 'post', '/dashboard/api/logout', 200);
    expect(String(out.headers['set-cookie'])).toMatch(/^gensvc_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/);
    expect(c.conforms(await as(s, 'get', '/api/credits'), 'get', '/api/credits', 401)).toMatchObject({
      error: { type: 'unauthorized' },
    });
    c.conforms(await as(s, 'get', '/dashboard/api/session'), 'get', '/dashboard/api/session', 401);
  });

  it('an expired session is refused', async () => {
    const s = await login(h, user);
    await h.pool.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [
      hashToken(s.cookie.split('=')[1]!),
    ]);
    expect((await as(s, 'get', '/api/credits')).statusCode).toBe(401);
  });
});

describe('CSRF and origins', () => {
  it('refuses a session’s change without its token, with another session’s token, or from another origin', async () => {
    const user = await dashboardUser(h);
    const s = await login(h, user);
    const other = await login(h, await dashboardUser(h));
    const body = { scopes: ['chat'] };
    for (const [who, headers] of [
      [withoutCsrf(s), {}],
      [{ cookie: s.cookie, csrf: other.csrf }, {}],
      [s, { origin: 'https://evil.example' }],
      [s, { 'sec-fetch-site': 'cross-site' }],
    ] as [Session, Record<string, string>][]) {
      const res = await as(who, 'post', '/dashboard/api/keys', body, headers);
      expect(c.conforms(res, 'post', '/dashboard/api/keys', 403)).toMatchObject({ error: { type: 'csrf_error' } });
    }
    c.conforms(
      await as(s, 'post', '/dashboard/api/keys', body, { origin: 'http://localhost:80' }),
      'post',
      '/dashboard/api/keys',
      201,
    );
    // Group C with the session: the same rule on POST; reads need no token.
    c.conforms(
      await as(withoutCsrf(s), 'post', '/api/generate', { kind: 'chat', prompt: 'hi' }),
      'post',
      '/api/generate',
      403,
    );
    c.conforms(await as(s, 'post', '/api/generate', { kind: 'chat', prompt: 'hi' }), 'post', '/api/generate', 200);
    c.conforms(await as(withoutCsrf(s), 'get', '/api/credits'), 'get', '/api/credits', 200);
    // A login from a page of another origin is refused before the password is looked at.
    const foreign = await h.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      headers: { origin: 'https://evil.example' },
      payload: { email: user.email, password: user.password },
    });
    c.conforms(foreign, 'post', '/dashboard/api/login', 403);
    c.conforms(
      await h.app.inject({
        method: 'POST',
        url: '/dashboard/api/set-password',
        headers: { origin: 'https://evil.example' },
        payload: { token: 'x', password: 'whatever it may be' },
      }),
      'post',
      '/dashboard/api/set-password',
      403,
    );
  });

  it('a session opens group C only: groups A, webhooks and MCP still want a key', async () => {
    const s = await login(h, await dashboardUser(h));
    for (const [method, url] of [
      ['GET', '/api/v1/balance'],
      ['GET', '/api/v1/generations'],
      ['GET', '/api/v1/webhooks'],
      ['POST', '/api/mcp'],
    ] as const) {
      const res = await as(s, method.toLowerCase() as Method, url, method === 'POST' ? {} : undefined);
      expect(res.statusCode, url).toBe(401);
    }
  });
});

describe('group C with a session', () => {
  it('generates with every scope of the account, and is limited per user at the plan’s rate', async () => {
    const user = await dashboardUser(h, { credits: 100, plan: 'free', chatCap: 0 });
    const s = await login(h, user);
    const { generation } = c.conforms<{ generation: { id: string; status: string; creditsCharged: number } }>(
      await as(s, 'post', '/api/generate', { kind: 'image', model: 'flux', prompt: 'a kite' }),
      'post',
      '/api/generate',
      200,
    );
    expect(generation).toMatchObject({ status: 'succeeded', creditsCharged: 3 });
    c.conforms(await as(s, 'get', `/api/generate/${generation.id}`), 'get', '/api/generate/{id}', 200);
    // Made by the session, it is the account's like any other: a key reads it too.
    expect((await h.call('GET', `/api/v1/generations/${generation.id}`, { key: user.key })).statusCode).toBe(200);
    let last: LightMyRequestResponse | undefined;
    for (let i = 0; i < PLAN_RATE_LIMITS.free; i++) last = await as(s, 'get', '/api/credits');
    expect(last!.headers['ratelimit-limit']).toBe(String(PLAN_RATE_LIMITS.free));
    expect(last!.statusCode).toBe(429);
    // The key's window is its own.
    expect((await h.call('GET', '/api/credits', { key: user.key })).statusCode).toBe(200);
  });
});

describe('the dashboard API', () => {
  let user: DashboardUser & { key: string };
  let s: Session;
  beforeAll(async () => {
    user = await dashboardUser(h, { credits: 500, chatCap: 2 });
    s = await login(h, user);
  });

  it('session, vocabulary and overview', async () => {
    expect(
      c.conforms(await as(s, 'get', '/dashboard/api/session'), 'get', '/dashboard/api/session', 200),
    ).toMatchObject({ user: { email: user.email }, accountId: user.accountId, csrfToken: s.csrf });
    // The pages list kinds and statuses from here, not from copies of core/vocabulary.ts.
    expect(
      c.conforms(await as(s, 'get', '/dashboard/api/vocabulary'), 'get', '/dashboard/api/vocabulary', 200),
    ).toEqual({
      kinds: [...GENERATION_KINDS],
      scopes: [...SCOPES],
      statuses: [...GENERATION_STATUSES],
      inFlight: ['queued', 'running'],
    });
    expect(c.conforms(await as(s, 'get', '/dashboard/api/overview'), 'get', '/dashboard/api/overview', 200)).toEqual({
      balance: 500,
      holdsActive: 0,
      plan: 'samurai',
      rateLimitPerMinute: 600,
      trial: { chatCap: 2, chatUsed: 0, chatLeft: 2 },
    });
  });

  it('keys: created with scopes and models and shown once, listed without the key, used, revoked at once', async () => {
    const created = c.conforms<{ id: string; key: string; hint: string; scopes: string[]; models: string[] | null }>(
      await as(s, 'post', '/dashboard/api/keys', { scopes: ['generate:image', 'video'], models: ['flux'] }),
      'post',
      '/dashboard/api/keys',
      201,
    );
    expect(created).toMatchObject({ scopes: ['image', 'video'], models: ['flux'] });
    expect(created.hint).toBe(`${created.key.slice(0, 8)}…${created.key.slice(-4)}`);
    c.conforms(
      await as(s, 'post', '/dashboard/api/keys', { scopes: ['teleport'] }),
      'post',
      '/dashboard/api/keys',
      400,
    );

    const listed = () => as(s, 'get', '/dashboard/api/keys');
    const before = c.conforms<{ data: { id: string; lastUsedAt: string | null }[] }>(
      await listed(),
      'get',
      '/dashboard/api/keys',
      200,
    );
    expect(JSON.stringify(before)).not.toContain(created.key);
    expect(before.data.find((k) => k.id === created.id)!.lastUsedAt).toBeNull();

    const usedFrom = Date.now();
    expect((await h.call('GET', '/api/v1/balance', { key: created.key })).statusCode).toBe(200);
    const used = (await listed())
      .json<{ data: { id: string; lastUsedAt: string | null }[] }>()
      .data.find((k) => k.id === created.id)!;
    // The time of that use (PostgreSQL and this process read the same clock; the API shows milliseconds).
    expect(Date.parse(used.lastUsedAt!)).toBeGreaterThanOrEqual(usedFrom - 1);
    expect(Date.parse(used.lastUsedAt!)).toBeLessThanOrEqual(Date.now());
    // Written at most about once a minute.
    expect((await h.call('GET', '/api/v1/balance', { key: created.key })).statusCode).toBe(200);
    expect(
      (await listed())
        .json<{ data: { id: string; lastUsedAt: string | null }[] }>()
        .data.find((k) => k.id === created.id)!.lastUsedAt,
    ).toBe(used.lastUsedAt);

    const stranger = await login(h, await dashboardUser(h));
    const budgetUrl = `/dashboard/api/keys/${created.id}/budget`;
    c.conforms(
      await as(stranger, 'put', budgetUrl, { maxCredits: 10, period: 'day' }),
      'put',
      '/dashboard/api/keys/{id}/budget',
      404,
    );
    c.conforms(
      await as(s, 'put', budgetUrl, { maxCredits: 10, period: 'fortnight' }),
      'put',
      '/dashboard/api/keys/{id}/budget',
      400,
    );
    expect(
      c.conforms(
        await as(s, 'put', budgetUrl, { maxCredits: 10, period: 'day' }),
        'put',
        '/dashboard/api/keys/{id}/budget',
        200,
      ),
    ).toMatchObject({ maxCredits: 10, period: 'day', spentCredits: 0 });
    expect(
      (await listed()).json<{ data: { id: string; budget: unknown }[] }>().data.find((k) => k.id === created.id)!
        .budget,
    ).toMatchObject({ maxCredits: 10, availableCredits: 10 });
    c.conforms(await as(stranger, 'delete', budgetUrl), 'delete', '/dashboard/api/keys/{id}/budget', 404);
    c.conforms(await as(s, 'delete', budgetUrl), 'delete', '/dashboard/api/keys/{id}/budget', 200);
    c.conforms(
      await as(stranger, 'delete', `/dashboard/api/keys/${created.id}`),
      'delete',
      '/dashboard/api/keys/{id}',
      404,
    );
    expect(
      c.conforms<{ group_by: string }>(
        await as(s, 'get', '/dashboard/api/usage?group_by=key'),
        'get',
        '/dashboard/api/usage',
        200,
      ).group_by,
    ).toBe('key');
    c.conforms(
      await as(s, 'get', '/dashboard/api/usage?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z'),
      'get',
      '/dashboard/api/usage',
      400,
    );
    expect(
      c.conforms(
        await as(s, 'put', '/dashboard/api/low-balance', { thresholdCredits: 25 }),
        'put',
        '/dashboard/api/low-balance',
        200,
      ),
    ).toEqual({ thresholdCredits: 25, data: [] });
    c.conforms(
      await as(s, 'put', '/dashboard/api/low-balance', { thresholdCredits: -5 }),
      'put',
      '/dashboard/api/low-balance',
      400,
    );
    expect(c.conforms(await as(s, 'get', '/dashboard/api/alerts'), 'get', '/dashboard/api/alerts', 200)).toEqual({
      thresholdCredits: 25,
      data: [],
    });
    // Another account's user sees their own threshold, never this one.
    expect(c.conforms(await as(stranger, 'get', '/dashboard/api/alerts'), 'get', '/dashboard/api/alerts', 200)).toEqual(
      { thresholdCredits: null, data: [] },
    );
    c.conforms(await as(s, 'delete', `/dashboard/api/keys/${created.id}`), 'delete', '/dashboard/api/keys/{id}', 200);
    expect((await h.call('GET', '/api/v1/balance', { key: created.key })).statusCode).toBe(401);
    expect((await listed()).json<{ data: { id: string }[] }>().data.map((k) => k.id)).not.toContain(created.id);
  });

  it('quotes with the rules of submit and holds nothing; group A quotes too', async () => {
    const video = { kind: 'video', model: 'kling', prompt: 'waves', seconds: 30, quality: '1080p' };
    const q = c.conforms<{ credits: number; params: { seconds: number } }>(
      await as(s, 'post', '/dashboard/api/quote', video),
      'post',
      '/dashboard/api/quote',
      200,
    );
    expect(q).toMatchObject({
      kind: 'video',
      model: 'kling',
      credits: 130,
      free: false,
      balance: 500,
      affordable: true,
      params: { seconds: 10, resolution: '1080p' },
    });
    expect(
      c.conforms(
        await as(s, 'post', '/dashboard/api/quote', { kind: 'chat', prompt: 'hi', model: 'chat-opus' }),
        'post',
        '/dashboard/api/quote',
        200,
      ),
    ).toMatchObject({ credits: 0, free: true, model: 'chat-haiku' });
    expect(
      c.conforms(
        await as(s, 'post', '/dashboard/api/quote', { ...video, model: 'nope' }),
        'post',
        '/dashboard/api/quote',
        400,
      ),
    ).toMatchObject({ error: { type: 'unknown_cost' } });
    expect((await as(s, 'get', '/dashboard/api/overview')).json()).toMatchObject({ balance: 500, holdsActive: 0 });
    const { generation } = (await as(s, 'post', '/api/generate', { ...video, prompt: 'waves sim:delay=100' })).json<{
      generation: { id: string };
    }>();
    const g = (await as(s, 'get', `/dashboard/api/generations?limit=1`)).json<{
      data: { id: string; creditsQuoted: number }[];
    }>().data[0]!;
    expect(g).toMatchObject({ id: generation.id, creditsQuoted: q.credits });

    const v1 = await h.call('POST', '/api/v1/quote', {
      key: user.key,
      body: { kind: 'image', model: 'flux', prompt: 'x', width: 1600, height: 900 },
    });
    expect(v1.json()).toMatchObject({ kind: 'image', model: 'image-flux', credits: 3, params: { aspect: '16:9' } });
  });

  it('generations: list with filters, cancel one in flight, 409 for a finished one, 404 for another account’s', async () => {
    const { generation: running } = (
      await as(s, 'post', '/api/generate', { kind: 'video', model: 'seedance-lite', prompt: 'slow sim:delay=60000' })
    ).json<{ generation: { id: string } }>();
    const page = c.conforms<{ data: { id: string }[] }>(
      await as(s, 'get', '/dashboard/api/generations?kind=video&limit=5'),
      'get',
      '/dashboard/api/generations',
      200,
    );
    expect(page.data.map((g) => g.id)).toContain(running.id);
    c.conforms(await as(s, 'get', '/dashboard/api/generations?limit=0'), 'get', '/dashboard/api/generations', 400);
    const stranger = await login(h, await dashboardUser(h));
    c.conforms(
      await as(stranger, 'post', `/dashboard/api/generations/${running.id}/cancel`),
      'post',
      '/dashboard/api/generations/{id}/cancel',
      404,
    );
    expect(
      c.conforms(
        await as(s, 'post', `/dashboard/api/generations/${running.id}/cancel`),
        'post',
        '/dashboard/api/generations/{id}/cancel',
        200,
      ),
    ).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    const { generation: done } = (await as(s, 'post', '/api/generate', { kind: 'chat', prompt: 'hi' })).json<{
      generation: { id: string };
    }>();
    c.conforms(
      await as(s, 'post', `/dashboard/api/generations/${done.id}/cancel`),
      'post',
      '/dashboard/api/generations/{id}/cancel',
      409,
    );
  });

  it('webhooks through the session: the same API as group A’s, under /dashboard/api/webhooks', async () => {
    const P = '/dashboard/api/webhooks';
    const created = c.conforms<{ id: string; secret: string }>(
      await as(s, 'post', P, { url: 'http://127.0.0.1:9/hook' }),
      'post',
      P,
      201,
    );
    expect(created.secret).toMatch(/^whsec_/);
    c.conforms(await as(s, 'post', P, { url: 'ftp://nope' }), 'post', P, 400);
    const list = c.conforms<{ data: unknown[] }>(await as(s, 'get', P), 'get', P, 200);
    expect(JSON.stringify(list)).not.toContain(created.secret);
    c.conforms(await as(s, 'get', `${P}/${created.id}`), 'get', `${P}/{id}`, 200);
    c.conforms(await as(s, 'get', `${P}/wh_nope`), 'get', `${P}/{id}`, 404);
    c.conforms(await as(s, 'patch', `${P}/${created.id}`, { description: 'renamed' }), 'patch', `${P}/{id}`, 200);
    c.conforms(await as(s, 'patch', `${P}/${created.id}`, { url: 'nope' }), 'patch', `${P}/{id}`, 400);
    c.conforms(await as(s, 'patch', `${P}/wh_nope`, { description: 'x' }), 'patch', `${P}/{id}`, 404);
    const rotated = c.conforms<{ secret: string }>(
      await as(s, 'post', `${P}/${created.id}/rotate-secret`),
      'post',
      `${P}/{id}/rotate-secret`,
      200,
    );
    expect(rotated.secret).not.toBe(created.secret);
    c.conforms(await as(s, 'post', `${P}/wh_nope/rotate-secret`), 'post', `${P}/{id}/rotate-secret`, 404);
    const ping = c.conforms<{ id: string }>(
      await as(s, 'post', `${P}/${created.id}/test`),
      'post',
      `${P}/{id}/test`,
      202,
    );
    c.conforms(await as(s, 'post', `${P}/wh_nope/test`), 'post', `${P}/{id}/test`, 404);
    c.conforms(await as(s, 'get', `${P}/${created.id}/deliveries`), 'get', `${P}/{id}/deliveries`, 200);
    c.conforms(await as(s, 'get', `${P}/${created.id}/deliveries?limit=0`), 'get', `${P}/{id}/deliveries`, 400);
    c.conforms(await as(s, 'get', `${P}/wh_nope/deliveries`), 'get', `${P}/{id}/deliveries`, 404);
    c.conforms(
      await as(s, 'post', `${P}/${created.id}/deliveries/${ping.id}/redeliver`),
      'post',
      `${P}/{id}/deliveries/{deliveryId}/redeliver`,
      202,
    );
    c.conforms(
      await as(s, 'post', `${P}/${created.id}/deliveries/whd_nope/redeliver`),
      'post',
      `${P}/{id}/deliveries/{deliveryId}/redeliver`,
      404,
    );
    c.conforms(await as(s, 'patch', `${P}/${created.id}`, { enabled: false }), 'patch', `${P}/{id}`, 200);
    c.conforms(await as(s, 'post', `${P}/${created.id}/test`), 'post', `${P}/{id}/test`, 409);
    c.conforms(
      await as(s, 'post', `${P}/${created.id}/deliveries/${ping.id}/redeliver`),
      'post',
      `${P}/{id}/deliveries/{deliveryId}/redeliver`,
      409,
    );
    c.conforms(await as(s, 'delete', `${P}/${created.id}`), 'delete', `${P}/{id}`, 200);
    c.conforms(await as(s, 'delete', `${P}/${created.id}`), 'delete', `${P}/{id}`, 404);
    // Another account's session sees none of it, and a key of the account sees the same endpoints.
    expect((await h.call('GET', '/api/v1/webhooks', { key: user.key })).json<{ data: unknown[] }>().data).toHaveLength(
      0,
    );
  });
});

describe('callbacks through the session', () => {
  it('the callback secret, the log of callbacks named on jobs (a playground video’s too) and redelivery', async () => {
    const s = await login(h, await dashboardUser(h));
    const P = '/dashboard/api/webhooks';
    c.conforms(await as(s, 'get', `${P}/callback-secret`), 'get', `${P}/callback-secret`, 404);
    const made = c.conforms<{ secret: string }>(
      await as(s, 'post', `${P}/callback-secret/rotate`),
      'post',
      `${P}/callback-secret/rotate`,
      200,
    );
    expect(made.secret).toMatch(/^whsec_/);
    c.conforms(await as(s, 'get', `${P}/callback-secret`), 'get', `${P}/callback-secret`, 200);

    const { generation } = (
      await as(s, 'post', '/api/generate', {
        kind: 'image',
        model: 'flux',
        prompt: 'a fox',
        callbackUrl: 'http://127.0.0.1:9/hook',
      })
    ).json<{ generation: { id: string } }>();
    const LOG = `${P}/callbacks/deliveries`;
    const [delivery] = c.conforms<{ data: { id: string; event: string; url: string }[] }>(
      await as(s, 'get', `${LOG}?job=${generation.id}`),
      'get',
      LOG,
      200,
    ).data;
    expect(delivery).toMatchObject({ event: 'generation.succeeded', url: 'http://127.0.0.1:9/hook' });
    c.conforms(await as(s, 'get', `${LOG}?limit=0`), 'get', LOG, 400);
    const REDELIVER = `${LOG}/{deliveryId}/redeliver`;
    c.conforms(await as(s, 'post', `${LOG}/${delivery!.id}/redeliver`), 'post', REDELIVER, 202);
    c.conforms(await as(s, 'post', `${LOG}/whd_nope/redeliver`), 'post', REDELIVER, 404);
    await h.pool.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'gone' WHERE job_generation_id = $1`,
      [generation.id],
    );
    c.conforms(await as(s, 'post', `${LOG}/${delivery!.id}/redeliver`), 'post', REDELIVER, 409);
  });
});

describe('pages and assets', () => {
  it('redirects to the login page without a session, serves the shell with a strict CSP with one', async () => {
    const s = await login(h, await dashboardUser(h));
    for (const path of [
      '/dashboard',
      '/dashboard/generations',
      '/dashboard/keys',
      '/dashboard/webhooks',
      '/dashboard/playground',
    ]) {
      const anonymous = await h.app.inject({ method: 'GET', url: path });
      expect(anonymous.statusCode, path).toBe(303);
      expect(anonymous.headers.location).toBe('/dashboard/login');
      const page = await as(s, 'get', path);
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toMatch(
        /default-src 'none'; script-src 'self' 'sha256-[\w+/=]+'; style-src 'self'/,
      );
      expect(page.body).toContain(s.csrf);
      expect(page.body).not.toMatch(/https?:\/\/(?!localhost)[^"]*\.(js|css)/);
    }
    expect((await as(s, 'get', '/dashboard/login')).headers.location).toBe('/dashboard');
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/login' })).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/set-password' })).statusCode).toBe(200);
  });

  it('serves its scripts, styles and vendored modules itself, with ETags', async () => {
    for (const asset of [
      'app.js',
      'pages.js',
      'lib.js',
      'style.css',
      'vendor/preact.mjs',
      'vendor/hooks.mjs',
      'vendor/htm.mjs',
      'vendor/htm-preact.mjs',
    ]) {
      const res = await h.app.inject({ method: 'GET', url: `/dashboard/assets/${asset}` });
      expect(res.statusCode, asset).toBe(200);
      const again = await h.app.inject({
        method: 'GET',
        url: `/dashboard/assets/${asset}`,
        headers: { 'if-none-match': String(res.headers.etag) },
      });
      expect(again.statusCode).toBe(304);
    }
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/assets/../package.json' })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/assets/nope.js' })).statusCode).toBe(404);
  });
});

/** Every documented dashboard operation, with a request that passes validation. */
function everyDashboardRoute(): [Method, string, string, unknown][] {
  const P = '/dashboard/api/webhooks';
  return [
    ['post', '/dashboard/api/logout', '/dashboard/api/logout', undefined],
    ['get', '/dashboard/api/session', '/dashboard/api/session', undefined],
    ['get', '/dashboard/api/vocabulary', '/dashboard/api/vocabulary', undefined],
    ['get', '/dashboard/api/overview', '/dashboard/api/overview', undefined],
    ['get', '/dashboard/api/generations', '/dashboard/api/generations', undefined],
    [
      'post',
      '/dashboard/api/generations/{id}/cancel',
      `/dashboard/api/generations/${MISSING_GENERATION}/cancel`,
      undefined,
    ],
    ['post', '/dashboard/api/quote', '/dashboard/api/quote', { kind: 'chat', prompt: 'hi' }],
    ['get', '/dashboard/api/keys', '/dashboard/api/keys', undefined],
    ['get', '/dashboard/api/usage', '/dashboard/api/usage', undefined],
    ['post', '/dashboard/api/keys', '/dashboard/api/keys', { scopes: ['chat'] }],
    ['delete', '/dashboard/api/keys/{id}', '/dashboard/api/keys/key_nope', undefined],
    ['put', '/dashboard/api/keys/{id}/budget', '/dashboard/api/keys/key_nope/budget', { maxCredits: 1, period: 'day' }],
    ['delete', '/dashboard/api/keys/{id}/budget', '/dashboard/api/keys/key_nope/budget', undefined],
    ['get', '/dashboard/api/alerts', '/dashboard/api/alerts', undefined],
    ['put', '/dashboard/api/low-balance', '/dashboard/api/low-balance', { thresholdCredits: 1 }],
    ['post', P, P, { url: 'http://127.0.0.1:9/hook' }],
    ['get', P, P, undefined],
    ['get', `${P}/{id}`, `${P}/wh_nope`, undefined],
    ['patch', `${P}/{id}`, `${P}/wh_nope`, { description: 'x' }],
    ['delete', `${P}/{id}`, `${P}/wh_nope`, undefined],
    ['post', `${P}/{id}/rotate-secret`, `${P}/wh_nope/rotate-secret`, undefined],
    ['get', `${P}/{id}/deliveries`, `${P}/wh_nope/deliveries`, undefined],
    ['post', `${P}/{id}/deliveries/{deliveryId}/redeliver`, `${P}/wh_nope/deliveries/whd_nope/redeliver`, undefined],
    ['post', `${P}/{id}/test`, `${P}/wh_nope/test`, undefined],
    ['get', `${P}/callback-secret`, `${P}/callback-secret`, undefined],
    ['post', `${P}/callback-secret/rotate`, `${P}/callback-secret/rotate`, undefined],
    ['get', `${P}/callbacks/deliveries`, `${P}/callbacks/deliveries`, undefined],
    [
      'post',
      `${P}/callbacks/deliveries/{deliveryId}/redeliver`,
      `${P}/callbacks/deliveries/whd_nope/redeliver`,
      undefined,
    ],
    ['get', '/dashboard/api/ledger', '/dashboard/api/ledger', undefined],
    ['get', '/dashboard/api/customer-defaults', '/dashboard/api/customer-defaults', undefined],
    [
      'put',
      '/dashboard/api/customer-defaults',
      '/dashboard/api/customer-defaults',
      { budget: null, rateLimitPerMinute: null },
    ],
    ['get', '/dashboard/api/customers', '/dashboard/api/customers', undefined],
    ['get', '/dashboard/api/customers/{customer}', '/dashboard/api/customers/nobody', undefined],
    [
      'put',
      '/dashboard/api/customers/{customer}/limits',
      '/dashboard/api/customers/c1/limits',
      { rateLimitPerMinute: 3 },
    ],
    ['delete', '/dashboard/api/customers/{customer}/limits', '/dashboard/api/customers/nobody/limits', undefined],
    ['get', '/dashboard/api/team', '/dashboard/api/team', undefined],
    ['post', '/dashboard/api/team', '/dashboard/api/team', { email: 'invitee@example.com', role: 'viewer' }],
    ['patch', '/dashboard/api/team/{id}', '/dashboard/api/team/usr_nope', { role: 'viewer' }],
    ['delete', '/dashboard/api/team/{id}', '/dashboard/api/team/usr_nope', undefined],
    ['get', '/dashboard/api/audit-log', '/dashboard/api/audit-log', undefined],
  ];
}
const FAKE_SESSION: Session = { cookie: `gensvc_session=${'a'.repeat(43)}`, csrf: 'x' };

describe('every documented answer of the session routes', () => {
  it('401 without a session, 403 for a change without its CSRF token, 429 once the user’s window is used up', async () => {
    const user = await dashboardUser(h);
    const s = await login(h, user);
    for (const [method, path, url, body] of everyDashboardRoute()) {
      expect(c.conforms(await as(undefined, method, url, body), method, path, 401)).toMatchObject({
        error: { type: 'unauthorized' },
      });
      if (method !== 'get') c.conforms(await as(withoutCsrf(s), method, url, body), method, path, 403);
    }
    for (let i = 0; i < LIMITS.requestsPerMinute; i++) await as(s, 'get', '/dashboard/api/session');
    for (const [method, path, url, body] of everyDashboardRoute()) {
      const res = await as(s, method, url, body);
      expect(c.conforms(res, method, path, 429)).toMatchObject({ error: { type: 'rate_limit_error' } });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
  });

  const anonymous = (): [Method, string, unknown][] => [
    ['post', '/dashboard/api/login', { email: 'x@example.com', password: 'whatever it may be' }],
    ['post', '/dashboard/api/set-password', { token: 'a'.repeat(43), password: 'whatever it may be' }],
  ];

  it('503 when PostgreSQL cannot be reached, 500 when it is broken, without internals', async () => {
    const unreachable = new pg.Pool({
      connectionString: `postgresql://nobody@127.0.0.1:${await freePort()}/nowhere`,
      connectionTimeoutMillis: 2_000,
      max: 1,
    });
    const down = await productionApi(h, {
      pool: unreachable,
    });
    try {
      for (const [method, path, url, body] of everyDashboardRoute()) {
        const { error } = c.conforms<{ error: { message: string } }>(
          await as(FAKE_SESSION, method, url, body, {}, down),
          method,
          path,
          503,
        );
        expect(error.message).not.toMatch(/ECONNREFUSED|nowhere/);
      }
      for (const [method, path, body] of anonymous())
        c.conforms(await as(undefined, method, path, body, {}, down), method, path, 503);
      c.conforms(
        await down.inject({
          method: 'POST',
          url: '/admin/v1/users',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          payload: { accountId: 'acct_x', email: 'x@example.com' },
        }),
        'post',
        '/admin/v1/users',
        503,
      );
    } finally {
      await down.close();
      await unreachable.end();
    }
    await withScratchDatabase(async (pool) => {
      await pool.query(
        'DROP TABLE sessions, password_links, users, ledger_entries, holds, idempotency_keys, generations, api_keys, accounts CASCADE',
      );
      const broken = await productionApi(h, {
        pool,
      });
      try {
        for (const [method, path, url, body] of everyDashboardRoute()) {
          expect(
            c.conforms<{ error: { message: string } }>(
              await as(FAKE_SESSION, method, url, body, {}, broken),
              method,
              path,
              500,
            ).error.message,
          ).toBe('Internal error; retry shortly.');
        }
        for (const [method, path, body] of anonymous())
          c.conforms(await as(undefined, method, path, body, {}, broken), method, path, 500);
        c.conforms(
          await broken.inject({
            method: 'POST',
            url: '/admin/v1/users',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
            payload: { accountId: 'acct_x', email: 'x@example.com' },
          }),
          'post',
          '/admin/v1/users',
          500,
        );
      } finally {
        await broken.close();
      }
    });
  });

  it('each role against each route: refused with 403 permission_error exactly where its permissions say', async () => {
    const owner = await dashboardUser(h);
    const table = Object.entries(DASHBOARD_ROUTE_PERMISSIONS);
    // The table names every session route the app serves, and only those.
    const served = [...servedRoutes(h.app)].filter((r) => r.includes(' /dashboard/api/'));
    const open = [
      'post /dashboard/api/login',
      'post /dashboard/api/set-password',
      'post /dashboard/api/signup',
      'post /dashboard/api/signup/verify',
    ];
    const listed = table.map(([r]) => r.replace(/^[A-Z]+/, (m) => m.toLowerCase()));
    expect(served.filter((r) => !open.includes(r) && !listed.includes(r))).toEqual([]);
    // Billing's routes are served only when Stripe is configured (not here).
    expect(listed.filter((r) => !served.includes(r))).toEqual([
      'get /dashboard/api/billing',
      'post /dashboard/api/billing/checkout',
    ]);
    for (const role of ROLES) {
      const s = await login(h, await userOf(h, owner.accountId, role));
      expect((await as(s, 'get', '/dashboard/api/session')).json()).toMatchObject({
        role,
        permissions: ROLE_PERMISSIONS[role],
      });
      for (const [method, path, url, body] of everyDashboardRoute()) {
        if (method === 'post' && path === '/dashboard/api/logout') continue;
        const needed = DASHBOARD_ROUTE_PERMISSIONS[`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`];
        expect(needed, `${method} ${path} is in the table`).toBeDefined();
        const res = await as(s, method, url, body);
        if (mayDo(role, needed!)) expect(res.statusCode, `${role} ${method} ${path}: ${res.body}`).not.toBe(403);
        else
          expect(
            c.conforms<{ error: { type: string } }>(res, method, path, 403).error.type,
            `${role} ${method} ${path}`,
          ).toBe('permission_error');
      }
      // Generating with the session (the playground, group C) is the developer's, the admin's and the owner's.
      const gen = await as(s, 'post', '/api/generate', { kind: 'chat', prompt: 'hi' });
      expect(gen.statusCode === 403, `${role} POST /api/generate`).toBe(!mayDo(role, 'playground'));
    }
  });

  it('the team: invitations carry the role, only an owner touches an owner, the last owner stays, and every change is in the audit log', async () => {
    const owner = await dashboardUser(h);
    const s = await login(h, owner);
    const invited = c.conforms<{ id: string; role: string; setPasswordUrl: string }>(
      await as(s, 'post', '/dashboard/api/team', { email: `admin-${Date.now()}@example.com`, role: 'admin' }),
      'post',
      '/dashboard/api/team',
      201,
    );
    expect(invited.role).toBe('admin');
    c.conforms(
      await as(s, 'post', '/dashboard/api/team', { email: 'not an address', role: 'admin' }),
      'post',
      '/dashboard/api/team',
      400,
    );
    c.conforms(
      await as(s, 'post', '/dashboard/api/team', { email: owner.email, role: 'viewer' }),
      'post',
      '/dashboard/api/team',
      409,
    );
    const password = 'correct horse battery staple';
    await as(undefined, 'post', '/dashboard/api/set-password', { token: linkToken(invited.setPasswordUrl), password });
    const list = c.conforms<{ data: { id: string; email: string; role: string }[] }>(
      await as(s, 'get', '/dashboard/api/team'),
      'get',
      '/dashboard/api/team',
      200,
    );
    const admin = list.data.find((m) => m.id === invited.id)!;
    const a = await login(h, { email: admin.email, password });
    // An admin may not make an owner, nor change or remove one.
    c.conforms(
      await as(a, 'post', '/dashboard/api/team', { email: `o-${Date.now()}@example.com`, role: 'owner' }),
      'post',
      '/dashboard/api/team',
      403,
    );
    c.conforms(
      await as(a, 'patch', `/dashboard/api/team/${owner.userId}`, { role: 'viewer' }),
      'patch',
      '/dashboard/api/team/{id}',
      403,
    );
    c.conforms(await as(a, 'delete', `/dashboard/api/team/${owner.userId}`), 'delete', '/dashboard/api/team/{id}', 403);
    // The last owner can neither step down nor leave.
    c.conforms(
      await as(s, 'patch', `/dashboard/api/team/${owner.userId}`, { role: 'admin' }),
      'patch',
      '/dashboard/api/team/{id}',
      409,
    );
    c.conforms(await as(s, 'delete', `/dashboard/api/team/${owner.userId}`), 'delete', '/dashboard/api/team/{id}', 409);
    c.conforms(
      await as(s, 'patch', `/dashboard/api/team/${invited.id}`, { role: 'boss' }),
      'patch',
      '/dashboard/api/team/{id}',
      400,
    );
    c.conforms(
      await as(s, 'patch', '/dashboard/api/team/usr_nope', { role: 'viewer' }),
      'patch',
      '/dashboard/api/team/{id}',
      404,
    );
    c.conforms(await as(s, 'delete', '/dashboard/api/team/usr_nope'), 'delete', '/dashboard/api/team/{id}', 404);
    c.conforms(
      await as(s, 'patch', `/dashboard/api/team/${invited.id}`, { role: 'billing' }),
      'patch',
      '/dashboard/api/team/{id}',
      200,
    );
    // The demoted member's next request has the new role: billing reads the ledger but may not see the audit log.
    c.conforms(await as(a, 'get', '/dashboard/api/ledger'), 'get', '/dashboard/api/ledger', 200);
    c.conforms(await as(a, 'get', '/dashboard/api/ledger?format=csv'), 'get', '/dashboard/api/ledger', 200);
    c.conforms(await as(a, 'get', '/dashboard/api/ledger?cursor=nonsense'), 'get', '/dashboard/api/ledger', 400);
    expect((await as(a, 'get', '/dashboard/api/audit-log')).statusCode).toBe(403);
    // Customers' limits: billing's.
    c.conforms(
      await as(a, 'put', '/dashboard/api/customer-defaults', {
        budget: { maxCredits: 10, period: 'week' },
        rateLimitPerMinute: 60,
      }),
      'put',
      '/dashboard/api/customer-defaults',
      200,
    );
    c.conforms(
      await as(a, 'put', '/dashboard/api/customer-defaults', {
        budget: { maxCredits: 10, period: 'year' },
        rateLimitPerMinute: null,
      }),
      'put',
      '/dashboard/api/customer-defaults',
      400,
    );
    c.conforms(await as(a, 'get', '/dashboard/api/customer-defaults'), 'get', '/dashboard/api/customer-defaults', 200);
    c.conforms(
      await as(a, 'put', '/dashboard/api/customers/alice/limits', { budget: { maxCredits: 5, period: 'day' } }),
      'put',
      '/dashboard/api/customers/{customer}/limits',
      200,
    );
    c.conforms(
      await as(a, 'put', '/dashboard/api/customers/alice/limits', { rateLimitPerMinute: -2 }),
      'put',
      '/dashboard/api/customers/{customer}/limits',
      400,
    );
    c.conforms(await as(a, 'get', '/dashboard/api/customers/alice'), 'get', '/dashboard/api/customers/{customer}', 200);
    c.conforms(await as(a, 'get', '/dashboard/api/customers'), 'get', '/dashboard/api/customers', 200);
    c.conforms(await as(a, 'get', '/dashboard/api/customers?cursor=nonsense'), 'get', '/dashboard/api/customers', 400);
    c.conforms(
      await as(a, 'get', '/dashboard/api/customers/nobody'),
      'get',
      '/dashboard/api/customers/{customer}',
      404,
    );
    const long = 'x'.repeat(300);
    c.conforms(
      await as(a, 'get', `/dashboard/api/customers/${long}`),
      'get',
      '/dashboard/api/customers/{customer}',
      400,
    );
    c.conforms(
      await as(a, 'delete', `/dashboard/api/customers/${long}/limits`),
      'delete',
      '/dashboard/api/customers/{customer}/limits',
      400,
    );
    c.conforms(
      await as(a, 'delete', '/dashboard/api/customers/nobody/limits'),
      'delete',
      '/dashboard/api/customers/{customer}/limits',
      404,
    );
    c.conforms(
      await as(a, 'delete', '/dashboard/api/customers/alice/limits'),
      'delete',
      '/dashboard/api/customers/{customer}/limits',
      200,
    );
    c.conforms(await as(s, 'delete', `/dashboard/api/team/${invited.id}`), 'delete', '/dashboard/api/team/{id}', 200);
    // Removed: the member's session ends at once.
    expect((await as(a, 'get', '/dashboard/api/session')).statusCode).toBe(401);
    c.conforms(await as(s, 'get', '/dashboard/api/audit-log?cursor=nonsense'), 'get', '/dashboard/api/audit-log', 400);
    const log = c.conforms<{
      data: {
        action: string;
        target: string | null;
        actor: { type: string; email: string | null; ip: string | null };
      }[];
    }>(await as(s, 'get', '/dashboard/api/audit-log?limit=200'), 'get', '/dashboard/api/audit-log', 200);
    expect(log.data.map((e) => [e.action, e.actor.email])).toEqual([
      ['member.removed', owner.email],
      ['customer.limits_removed', admin.email],
      ['customer.limits_set', admin.email],
      ['customer_defaults.set', admin.email],
      ['member.role_changed', owner.email],
      ['member.invited', owner.email],
      ['member.invited', null],
      ['key.created', null],
    ]);
    expect(log.data[0]!.actor.ip).toBeTruthy();
  });

  it('every documented status of the dashboard routes and of POST /admin/v1/users was produced', () => {
    c.expectCoverage('dashboard-http.test.ts');
  });
});
