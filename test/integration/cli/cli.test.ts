import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';

const BIN = fileURLToPath(new URL('../../../bin/gensvc.mjs', import.meta.url));

let h: Harness;
let url: string;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
});

/** The real CLI as a child process (asynchronously: the API it talks to runs in this process). */
function gensvc(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { PATH, HOME } = process.env;
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH, HOME, GENSVC_URL: url, ADMIN_TOKEN, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

async function balance(key: string): Promise<{ status: number; balance?: number }> {
  const res = await fetch(`${url}/api/credits`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as { balance?: number };
  return { status: res.status, balance: body.balance };
}

describe('gensvc against the running API', () => {
  it('creates an account and a key, adds credits, and revokes the key', async () => {
    const account = await gensvc(['account', 'create', '--plan', 'samurai', '--credits', '500']);
    expect(account).toMatchObject({ code: 0, stderr: '' });
    const accountId = account.stdout.trim();
    expect(accountId).toMatch(/^acct_[0-9a-z]{26}$/);

    const created = await gensvc(['key', 'create', accountId, '--scopes', 'image,video,chat']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/shown once only/);
    const key = /API key {2}(gsk_\S+)/.exec(created.stdout)?.[1];
    const keyId = /Key id {3}(key_\S+)/.exec(created.stdout)?.[1];
    expect(key).toBeDefined();
    expect(keyId).toBeDefined();
    expect(await balance(key!)).toEqual({ status: 200, balance: 500 });

    const topped = await gensvc(['credits', 'add', accountId, '--credits', '250']);
    expect(topped).toEqual({ code: 0, stdout: `750 credits available on ${accountId}\n`, stderr: '' });
    expect(await balance(key!)).toEqual({ status: 200, balance: 750 });

    // A dashboard user: the link it prints sets the password once; then the user logs in.
    const user = await gensvc(['user', 'create', '--account', accountId, '--email', 'ops-cli@example.com']);
    expect(user).toMatchObject({ code: 0, stderr: '' });
    const link = /Set-password link {2}(\S+)/.exec(user.stdout)?.[1];
    expect(link).toMatch(new RegExp(`^${url}/dashboard/set-password#token=[\\w-]{43}$`));
    const token = new URL(link!).hash.slice('#token='.length);
    const set = await fetch(`${url}/dashboard/api/set-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, password: 'a password from the cli test' }),
    });
    expect(set.status).toBe(200);
    const login = await fetch(`${url}/dashboard/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ops-cli@example.com', password: 'a password from the cli test' }),
    });
    expect(login.status).toBe(200);

    const revoked = await gensvc(['key', 'revoke', keyId!]);
    expect(revoked).toMatchObject({ code: 0, stdout: `Revoked key ${keyId}; requests made with it now get 401.\n` });
    expect((await balance(key!)).status).toBe(401);
  });

  it('--json prints the API body; health answers ok without a token', async () => {
    const json = await gensvc(['account', 'create', '--plan', 'free', '--credits', '0', '--chat-cap', '3', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ id: expect.stringMatching(/^acct_/) });
    expect(await gensvc(['health'], { ADMIN_TOKEN: '' })).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
  });

  it('reports the API errors with their type and exit code 1', async () => {
    expect(await gensvc(['credits', 'add', 'acct_missing', '--credits', '5'])).toEqual({
      code: 1,
      stdout: '',
      stderr: "error: not_found: Account 'acct_missing' not found.\n",
    });
    const wrongToken = await gensvc(['key', 'revoke', 'key_x'], { ADMIN_TOKEN: 'not-the-token' });
    expect(wrongToken).toMatchObject({ code: 1, stdout: '' });
    expect(wrongToken.stderr).toMatch(/^error: unauthorized: A valid admin token is required/);
    const badScope = await gensvc(['key', 'create', 'acct_missing', '--scopes', 'telepathy']);
    expect(badScope.stderr).toMatch(/^error: invalid_request_error: unknown scope 'telepathy'/);
  });

  it('exits 2 with the usage for a bad command line, and hints when nothing listens', async () => {
    const usage = await gensvc(['account', 'create', '--plan', 'samurai']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^error: --credits is required\n\ngensvc: operate the generation service/);

    const closedPort = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const down = await gensvc(['health'], { GENSVC_URL: `http://127.0.0.1:${closedPort}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(`the service may not be running at http://127.0.0.1:${closedPort}`);
  });
});
