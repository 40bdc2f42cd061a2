import { describe, expect, it } from 'vitest';
import type { Fetch } from '../../../cli/admin-client';
import { parseInvocation, UsageError } from '../../../cli/args';
import { ConfigError, resolveTarget } from '../../../cli/config';
import { run } from '../../../cli/run';
import { USAGE } from '../../../cli/usage';

describe('parseInvocation', () => {
  it('reads each command with its flags', () => {
    expect(parseInvocation(['account', 'create', '--plan', 'samurai', '--credits', '500']).command).toEqual({
      name: 'account create',
      plan: 'samurai',
      credits: 500,
    });
    expect(parseInvocation(['account', 'create', '--plan=free', '--credits=0.5', '--chat-cap', '3']).command).toEqual({
      name: 'account create',
      plan: 'free',
      credits: 0.5,
      chatCap: 3,
    });
    expect(parseInvocation(['key', 'create', 'acct_1', '--scopes', 'image, video,chat']).command).toEqual({
      name: 'key create',
      accountId: 'acct_1',
      scopes: ['image', 'video', 'chat'],
    });
    expect(parseInvocation(['key', 'create', 'acct_1', '--scopes', 'image', '--models', 'flux,kling']).command).toEqual(
      {
        name: 'key create',
        accountId: 'acct_1',
        scopes: ['image'],
        models: ['flux', 'kling'],
      },
    );
    expect(parseInvocation(['credits', 'add', 'acct_1', '--credits', '250']).command).toEqual({
      name: 'credits add',
      accountId: 'acct_1',
      credits: 250,
    });
    expect(parseInvocation(['key', 'revoke', 'key_1']).command).toEqual({ name: 'key revoke', keyId: 'key_1' });
    expect(parseInvocation(['user', 'create', '--account', 'acct_1', '--email', 'ada@example.com']).command).toEqual({
      name: 'user create',
      accountId: 'acct_1',
      email: 'ada@example.com',
    });
    expect(() => parseInvocation(['user', 'create', '--account', 'acct_1', '--email', 'ada'])).toThrow(
      /--email must be an email address/,
    );
    expect(() => parseInvocation(['user', 'create', '--email', 'ada@example.com'])).toThrow(/--account is required/);
    expect(parseInvocation(['health']).command).toEqual({ name: 'health' });
  });

  it('treats no arguments, help, --help and -h as help', () => {
    for (const argv of [[], ['help'], ['--help'], ['-h'], ['key', 'create', '--help']])
      expect(parseInvocation(argv).command).toEqual({ name: 'help' });
  });

  it('takes the global options anywhere', () => {
    const inv = parseInvocation(['--url', 'http://h:1', 'key', 'revoke', 'key_1', '--admin-token', 'tok', '--json']);
    expect(inv).toEqual({
      command: { name: 'key revoke', keyId: 'key_1' },
      json: true,
      url: 'http://h:1',
      adminToken: 'tok',
    });
  });

  it.each([
    [['deploy'], "unknown command 'deploy'"],
    [['account', 'delete'], "unknown command 'account delete'"],
    [['account', 'create', '--credits', '5'], '--plan is required'],
    [['account', 'create', '--plan', 'samurai'], '--credits is required'],
    [
      ['account', 'create', '--plan', 'daimyo', '--credits', '5'],
      '--plan must be one of free, ronin, shinobi, samurai',
    ],
    [['account', 'create', '--plan', 'free', '--credits', 'lots'], '--credits must be a number'],
    [
      ['account', 'create', '--plan', 'free', '--credits', '5', '--chat-cap', '1.5'],
      '--chat-cap must be a whole number',
    ],
    [['key', 'create', '--scopes', 'image'], "'key create' needs the account id"],
    [['key', 'create', 'acct_1'], '--scopes is required'],
    [['key', 'create', 'acct_1', '--scopes', ' , '], '--scopes needs a comma-separated list'],
    [['key', 'revoke'], "'key revoke' needs the key id"],
    [['key', 'revoke', 'key_1', 'key_2'], "unexpected argument 'key_2'"],
    [['credits', 'add', 'acct_1', '--credits', '0'], '--credits must be more than 0'],
    [['credits', 'add', 'acct_1', '--credits', '-5'], "Option '--credits' argument is ambiguous"],
    [['health', '--plan', 'free'], "--plan does not apply to 'health'"],
    [['health', '--verbose'], "Unknown option '--verbose'"],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });
});

describe('resolveTarget', () => {
  const revoke = parseInvocation(['key', 'revoke', 'key_1']);

  it('defaults to the local service and lets flags win over the environment', () => {
    expect(resolveTarget(parseInvocation(['health']), {})).toEqual({ url: 'http://127.0.0.1:3000' });
    expect(resolveTarget(revoke, { GENSVC_URL: 'http://env:1/', ADMIN_TOKEN: 'env' })).toEqual({
      url: 'http://env:1',
      adminToken: 'env',
    });
    const flagged = parseInvocation(['key', 'revoke', 'key_1', '--url', 'https://flag:2', '--admin-token', 'flag']);
    expect(resolveTarget(flagged, { GENSVC_URL: 'http://env:1', ADMIN_TOKEN: 'env' })).toEqual({
      url: 'https://flag:2',
      adminToken: 'flag',
    });
  });

  it('requires a token for admin commands and a real URL', () => {
    expect(() => resolveTarget(revoke, {})).toThrow(ConfigError);
    expect(() => resolveTarget(revoke, { ADMIN_TOKEN: '' })).toThrow(/ADMIN_TOKEN is not set/);
    expect(() => resolveTarget(revoke, { ADMIN_TOKEN: 't', GENSVC_URL: 'localhost:3000' })).toThrow(
      /must start with http/,
    );
    expect(() => resolveTarget(revoke, { ADMIN_TOKEN: 't', GENSVC_URL: 'not a url' })).toThrow(/is not a URL/);
  });
});

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records the request and answers with `status` and `body`. */
function fakeFetch(status: number, body: unknown) {
  const sent: Sent[] = [];
  const fetch: Fetch = (input, init) => {
    sent.push({
      method: init?.method ?? 'GET',
      url: input as string,
      headers: init?.headers as Record<string, string>,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
    });
    return Promise.resolve(
      new Response(typeof body === 'string' ? body : JSON.stringify(body), {
        status,
        headers: { 'content-type': 'application/json' },
      }),
    );
  };
  return { fetch, sent };
}

async function cli(
  argv: string[],
  fetch: Fetch,
  env: Record<string, string> = { ADMIN_TOKEN: 'tok', GENSVC_URL: 'http://svc:9' },
) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, env, { fetch, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('run', () => {
  it('usage asks the report grouped as told and prints a table with the total', async () => {
    expect(parseInvocation(['usage']).command).toEqual({ name: 'usage', groupBy: 'model' });
    expect(() => parseInvocation(['usage', '--group-by', 'account'])).toThrow(
      /--group-by must be one of model, upstream, day/,
    );
    const row = { generations: 2, revenueEur: 0.12, costEur: 0.03, marginEur: 0.09, uncosted: 0 };
    const { fetch, sent } = fakeFetch(200, {
      groupBy: 'upstream',
      from: '2026-11-01T00:00:00.000Z',
      to: '2026-11-25T00:00:00.000Z',
      rows: [{ key: 'fal', ...row }],
      total: row,
    });
    const out = await cli(['usage', '--group-by', 'upstream', '--from', '2026-11-01'], fetch);
    expect(out.code).toBe(0);
    expect(sent[0]).toMatchObject({
      method: 'GET',
      url: 'http://svc:9/admin/v1/usage?group_by=upstream&from=2026-11-01',
    });
    expect(out.stdout.split('\n').slice(1, 4)).toEqual([
      'upstream  generations  revenue EUR  cost EUR  margin EUR  margin  uncosted',
      'fal                 2       0.1200    0.0300      0.0900   75.0%         0',
      'total               2       0.1200    0.0300      0.0900   75.0%         0',
    ]);
  });

  it('account create posts the body with the admin token and prints the id', async () => {
    const f = fakeFetch(201, { id: 'acct_01abc' });
    expect(
      await cli(['account', 'create', '--plan', 'samurai', '--credits', '500', '--chat-cap', '2'], f.fetch),
    ).toEqual({ code: 0, stdout: 'acct_01abc\n', stderr: '' });
    expect(f.sent).toEqual([
      {
        method: 'POST',
        url: 'http://svc:9/admin/v1/accounts',
        headers: { accept: 'application/json', authorization: 'Bearer tok', 'content-type': 'application/json' },
        body: { plan: 'samurai', credits: 500, chatCap: 2 },
      },
    ]);
  });

  it('--json prints the API body', async () => {
    const f = fakeFetch(201, { id: 'acct_01abc' });
    const out = await cli(['account', 'create', '--plan', 'free', '--credits', '1', '--json'], f.fetch);
    expect(JSON.parse(out.stdout)).toEqual({ id: 'acct_01abc' });
  });

  it('key create prints the key, its id and that it is shown once', async () => {
    const f = fakeFetch(201, { id: 'key_01xyz', key: 'gsk_secret' });
    const out = await cli(['key', 'create', 'acct/1', '--scopes', 'image,video', '--models', 'flux'], f.fetch);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('API key  gsk_secret\n');
    expect(out.stdout).toContain('Key id   key_01xyz\n');
    expect(out.stdout).toMatch(/shown once only/);
    expect(f.sent[0]).toMatchObject({
      method: 'POST',
      url: 'http://svc:9/admin/v1/accounts/acct%2F1/keys',
      body: { scopes: ['image', 'video'], models: ['flux'] },
    });
  });

  it('credits add prints the new available balance', async () => {
    const f = fakeFetch(200, { id: 'acct_1', balance: 750 });
    expect(await cli(['credits', 'add', 'acct_1', '--credits', '250'], f.fetch)).toEqual({
      code: 0,
      stdout: '750 credits available on acct_1\n',
      stderr: '',
    });
    expect(f.sent[0]).toMatchObject({
      method: 'POST',
      url: 'http://svc:9/admin/v1/accounts/acct_1/credits',
      body: { credits: 250 },
    });
  });

  it('user create posts the account and email and prints the one-time link', async () => {
    const f = fakeFetch(201, {
      id: 'usr_1',
      setPasswordUrl: 'http://svc:9/dashboard/set-password#token=abc',
      expiresAt: '2030-01-01T00:00:00.000Z',
    });
    const out = await cli(['user', 'create', '--account', 'acct_1', '--email', 'ada@example.com'], f.fetch);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('Set-password link  http://svc:9/dashboard/set-password#token=abc\n');
    expect(out.stdout).toContain('User id            usr_1\n');
    expect(f.sent[0]).toMatchObject({
      method: 'POST',
      url: 'http://svc:9/admin/v1/users',
      body: { accountId: 'acct_1', email: 'ada@example.com' },
    });
  });

  it('key revoke sends DELETE without a body', async () => {
    const f = fakeFetch(200, { id: 'key_1', revoked: true });
    const out = await cli(['key', 'revoke', 'key_1'], f.fetch);
    expect(out).toMatchObject({ code: 0, stdout: 'Revoked key key_1; requests made with it now get 401.\n' });
    expect(f.sent[0]).toEqual({
      method: 'DELETE',
      url: 'http://svc:9/admin/v1/keys/key_1',
      headers: { accept: 'application/json', authorization: 'Bearer tok' },
      body: undefined,
    });
  });

  it('health needs no token; 503 prints the failing checks and exits 1', async () => {
    expect(await cli(['health'], fakeFetch(200, { status: 'ok' }).fetch, {})).toEqual({
      code: 0,
      stdout: 'ok\n',
      stderr: '',
    });
    const down = await cli(
      ['health'],
      fakeFetch(503, { status: 'unavailable', checks: { database: 'ok', temporal: 'unreachable' } }).fetch,
      {},
    );
    expect(down).toEqual({ code: 1, stdout: 'unavailable (database: ok, temporal: unreachable)\n', stderr: '' });
  });

  it('prints an API error as `error: <type>: <message>` and exits 1', async () => {
    const f = fakeFetch(404, { error: { message: "Account 'acct_x' not found.", type: 'not_found', code: 404 } });
    expect(await cli(['credits', 'add', 'acct_x', '--credits', '1'], f.fetch)).toEqual({
      code: 1,
      stdout: '',
      stderr: "error: not_found: Account 'acct_x' not found.\n",
    });
  });

  it('names the status when the answer is not the documented error body', async () => {
    const out = await cli(['key', 'revoke', 'key_1'], fakeFetch(502, 'Bad Gateway').fetch);
    expect(out).toEqual({ code: 1, stdout: '', stderr: 'error: http_502: Bad Gateway\n' });
  });

  it('hints that the service may not be running when the connection is refused', async () => {
    const refused: Fetch = () =>
      Promise.reject(
        new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
        }),
      );
    const out = await cli(['health'], refused, { GENSVC_URL: 'http://127.0.0.1:9' });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('error: cannot reach http://127.0.0.1:9 (connection refused)');
    expect(out.stderr).toContain('the service may not be running at http://127.0.0.1:9');
  });

  it('usage errors print the usage on stderr and exit 2; help prints it on stdout', async () => {
    const never: Fetch = () => Promise.reject(new Error('no request expected'));
    expect(await cli(['frobnicate'], never)).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: unknown command 'frobnicate'\n\n${USAGE}`,
    });
    expect(await cli(['--help'], never)).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    const noToken = await cli(['key', 'revoke', 'key_1'], never, {});
    expect(noToken).toMatchObject({ code: 2, stdout: '' });
    expect(noToken.stderr).toMatch(/^error: ADMIN_TOKEN is not set/);
  });

  it('the usage lists every command with an example', () => {
    for (const example of [
      'account create --plan samurai --credits 500',
      'key create acct_',
      'key revoke key_',
      'credits add acct_',
      'user create --account acct_',
      'gensvc health',
    ]) {
      expect(USAGE).toContain(`e.g. gensvc ${example.replace(/^gensvc /, '')}`);
    }
  });
});
