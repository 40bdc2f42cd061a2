/**
 * Self-service sign-up (SIGNUP=open): a request emails a verification link (through a
 * real SMTP server, Mailpit, read back through its API); following it once creates a `free`
 * account with the configured credits and chat allowance, whose user then logs in. The answer
 * never tells whether an address has an account, attempts are limited, and the operator's
 * invitation flow is untouched. Closed by default: no routes, no pages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailRelay } from '../../../../runtime/mail-relay';
import type { MailRelay } from '../../../../runtime/mail-relay';
import { userOf } from '../../../support/dashboard';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startMailpit } from '../../../support/mailpit-server';
import type { MailpitServer } from '../../../support/mailpit-server';

const PASSWORD = 'a long enough password';
let h: Harness;
let closed: Harness;
let smtp: MailpitServer;
let relay: MailRelay;
beforeAll(async () => {
  h = await startHarness({
    worker: false,
    signup: { startingCredits: 25, chatCap: 4 },
    dashboardLimits: { loginsPerEmail: 2, loginsPerIp: 1_000 },
  });
  closed = await startHarness({ worker: false });
  smtp = await startMailpit();
  relay = startMailRelay({
    pool: h.pool,
    smtpUrl: smtp.smtpUrl,
    from: 'Generation service <signup@gensvc.test>',
    dashboardUrl: 'https://gensvc.test/dashboard',
    pollMs: 100,
  });
});
afterAll(async () => {
  await relay?.stop();
  await smtp?.stop();
  await closed?.close();
  await h?.close();
});

const post = (app: Harness['app'], url: string, payload: unknown, ip = '203.0.113.7') =>
  app.inject({ method: 'POST', url, payload: payload as object, remoteAddress: ip });
const signup = (email: string, password = PASSWORD, ip?: string) =>
  post(h.app, '/dashboard/api/signup', { email, password }, ip);
const newEmail = (tag: string) => `${tag}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

/** The one message sent to `email`, once it arrived. */
const mailTo = (email: string) =>
  eventually(async () => {
    const m = (await smtp.messages()).filter((x) => x.To.some((t) => t.Address === email));
    return m.length > 0 ? m : undefined;
  });
const tokenOf = (text: string) => /\/dashboard\/verify#token=([A-Za-z0-9_-]+)/.exec(text)?.[1];

describe('sign-up', () => {
  it('is closed by default: no route, no page', async () => {
    expect(
      (await post(closed.app, '/dashboard/api/signup', { email: newEmail('closed'), password: PASSWORD })).statusCode,
    ).toBe(404);
    expect((await closed.app.inject({ method: 'GET', url: '/dashboard/signup' })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'GET', url: '/dashboard/signup' })).statusCode).toBe(200);
  });

  it('emails a link; following it once creates a free account with the configured credits and chat allowance, whose user logs in', async () => {
    const email = newEmail('Ada');
    const asked = await signup(email.toUpperCase());
    expect(asked.statusCode, asked.body).toBe(202);
    const [mail] = await mailTo(email.toLowerCase());
    expect(mail!.Subject).toBe('Confirm your email to create your account');
    const token = tokenOf(await smtp.text(mail!.ID));
    expect(token).toBeDefined();
    // The token is forgotten once mailed (the relay clears it after the SMTP server took the mail): only its hash stays.
    await eventually(async () => {
      const kept = await h.pool.query('SELECT 1 FROM signups WHERE email = $1 AND mail_token IS NOT NULL', [
        email.toLowerCase(),
      ]);
      return kept.rowCount === 0 ? true : undefined;
    });

    const verified = await post(h.app, '/dashboard/api/signup/verify', { token });
    expect(verified.statusCode, verified.body).toBe(200);
    const { accountId } = verified.json<{ email: string; accountId: string }>();
    expect(verified.json()).toEqual({ email: email.toLowerCase(), accountId: expect.stringMatching(/^acct_/) });
    const account = (
      await h.pool.query('SELECT plan, balance_mc, held_mc, chat_cap, chat_used FROM accounts WHERE id = $1', [
        accountId,
      ])
    ).rows[0];
    expect(account).toEqual({ plan: 'free', balance_mc: 25_000, held_mc: 0, chat_cap: 4, chat_used: 0 });

    const again = await post(h.app, '/dashboard/api/signup/verify', { token });
    expect(again.statusCode).toBe(400);
    expect(again.json()).toMatchObject({
      error: { type: 'invalid_request_error', param: 'token', message: expect.stringContaining('already been used') },
    });
    expect((await post(h.app, '/dashboard/api/signup/verify', { token: 'x'.repeat(43) })).json()).toMatchObject({
      error: { param: 'token', message: 'This link is not valid.' },
    });

    const login = await post(h.app, '/dashboard/api/login', { email, password: PASSWORD });
    expect(login.statusCode, login.body).toBe(200);
    expect(login.json()).toMatchObject({ accountId, user: { email: email.toLowerCase() } });
  });

  it('answers an address that has an account exactly as a new one, mails it a note instead of a link, and creates nothing', async () => {
    const { accountId } = await h.account({ credits: 1 });
    const invited = await userOf(h, accountId); // the operator's invitation flow, unchanged
    const fresh = newEmail('fresh');
    const [known, unknown] = [await signup(invited.email), await signup(fresh)];
    expect(known.statusCode).toBe(202);
    expect(known.body).toBe(unknown.body);

    const [note] = await mailTo(invited.email);
    expect(note!.Subject).toBe('You already have an account');
    const text = await smtp.text(note!.ID);
    expect(tokenOf(text)).toBeUndefined();
    expect(text).toContain('https://gensvc.test/dashboard/login');
    const accounts = await h.pool.query('SELECT count(*)::int AS n FROM users WHERE email = $1', [invited.email]);
    expect(accounts.rows[0]).toEqual({ n: 1 });
    // The operator's user still logs in with the password they set.
    expect(
      (await post(h.app, '/dashboard/api/login', { email: invited.email, password: invited.password })).statusCode,
    ).toBe(200);

    // The same work either way, so that its time does not tell either: each request stored one
    // sign-up with its password hashed at the same cost (scrypt, the costly part), the registered
    // address's as much as the new one's; the mail relay alone tells them apart, later.
    const stored = await h.pool.query<{ email: string; password_hash: string }>(
      'SELECT email, password_hash FROM signups WHERE email = ANY($1::text[])',
      [[invited.email, fresh]],
    );
    expect(stored.rows.map((r) => r.email).sort()).toEqual([invited.email, fresh].sort());
    const costOf = (hash: string) => hash.split('$').slice(0, 4).join('$');
    expect(costOf(stored.rows[0]!.password_hash)).toMatch(/^scrypt\$\d+\$\d+\$\d+$/);
    expect(costOf(stored.rows[1]!.password_hash)).toBe(costOf(stored.rows[0]!.password_hash));
  });

  it('limits attempts per address, refuses a short password and a non-address in the documented shape, and stores nothing for them', async () => {
    const email = newEmail('limited');
    const short = await signup(email, 'short');
    expect(short.statusCode).toBe(400);
    expect(short.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'password' } });
    const notAnAddress = await signup('not-an-address');
    expect(notAnAddress.statusCode).toBe(400);
    expect(notAnAddress.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect((await signup(email)).statusCode).toBe(202);
    const limited = await signup(email);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ error: { type: 'rate_limit_error' } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    const stored = await h.pool.query('SELECT count(*)::int AS n FROM signups WHERE email = $1', [email]);
    expect(stored.rows[0]).toEqual({ n: 1 });
  });
});
