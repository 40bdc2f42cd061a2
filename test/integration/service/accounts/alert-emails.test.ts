/**
 * Alerts by email: the mail relay sends each alert to every dashboard user of the
 * account who has set a password, through a real SMTP server (Mailpit, built by `npm run
 * mailpit`), read back through Mailpit's API. At least once and without duplicates: two relays
 * at once send each email once, and an SMTP server that refuses is retried until one takes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../../core/ids';
import { admit } from '../../../../core/ledger';
import { freePort } from '../../../../runtime/process';
import { startMailRelay } from '../../../../runtime/mail-relay';
import type { MailRelay } from '../../../../runtime/mail-relay';
import { userOf } from '../../../support/dashboard';
import { ADMIN_TOKEN, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startMailpit } from '../../../support/mailpit-server';
import type { MailpitMessage, MailpitServer } from '../../../support/mailpit-server';

const FROM = 'Generation service <alerts@gensvc.test>';
let h: Harness;
let smtp: MailpitServer;
const relays: MailRelay[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
  smtp = await startMailpit();
});
afterAll(async () => {
  // Stopping twice is harmless: a test may have stopped one already.
  await Promise.all(relays.map((r) => r.stop()));
  await smtp?.stop();
  await h?.close();
});

const relay = (smtpUrl: string) => {
  const r = startMailRelay({
    pool: h.pool,
    smtpUrl,
    from: FROM,
    dashboardUrl: 'https://gensvc.test/dashboard',
    pollMs: 100,
    retryScheduleMs: [100, 100, 100],
  });
  relays.push(r);
  return r;
};

const setThreshold = async (accountId: string, thresholdCredits: number) => {
  const res = await h.app.inject({
    method: 'PUT',
    url: `/admin/v1/accounts/${accountId}/low-balance`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { thresholdCredits },
  });
  expect(res.statusCode, res.body).toBe(200);
};

const holds = (accountId: string, n: number) =>
  Promise.all(
    Array.from({ length: n }, () =>
      admit(h.pool, [
        {
          id: newId('gen'),
          accountId,
          apiKeyId: null,
          kind: 'image',
          model: 'image-flux',
          params: {},
          internal: {},
          prompt: 'a lighthouse',
          quoteMc: 3_000,
        },
      ]),
    ),
  );

const to = (address: string) => (m: MailpitMessage) => m.To.some((t) => t.Address === address);

describe('alert emails', () => {
  it('a crossing reaches every user of the account who set a password, once each, even with two relays sending at once', async () => {
    const { accountId } = await h.account({ credits: 30 });
    const [ada, bob] = [await userOf(h, accountId), await userOf(h, accountId)];
    // Invited, never set a password: not a confirmed address, not mailed.
    const invited = `invited-${Date.now()}@example.com`;
    expect((await h.admin('POST', '/admin/v1/users', { accountId, email: invited })).statusCode).toBe(201);
    const both = [relay(smtp.smtpUrl), relay(smtp.smtpUrl)];

    await setThreshold(accountId, 20);
    await holds(accountId, 8); // 30 → 6 credits, crossing 20 once
    const [alert] = (
      await h.pool.query<{ id: string }>(
        "SELECT id FROM account_alerts WHERE account_id = $1 AND event = 'balance.low'",
        [accountId],
      )
    ).rows;
    expect(alert).toBeDefined();

    const got = await eventually(async () => {
      const all = (await smtp.messages()).filter((m) => to(ada.email)(m) || to(bob.email)(m));
      return all.length >= 2 ? all : undefined;
    });
    // Both relays have had many turns since; still one email each.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const mine = (await smtp.messages()).filter((m) => to(ada.email)(m) || to(bob.email)(m) || to(invited)(m));
    expect(mine.map((m) => m.To[0]!.Address).sort()).toEqual([ada.email, bob.email].sort());
    for (const m of got) {
      expect(m.From.Address).toBe('alerts@gensvc.test');
      expect(m.Subject).toMatch(/^Low balance: \d+ credits left$/);
      expect(m.MessageID).toContain(alert!.id);
      const text = await smtp.text(m.ID);
      expect(text).toContain(`Your account ${accountId} has`);
      expect(text).toContain('below the 20 credits');
      expect(text).toContain('https://gensvc.test/dashboard');
    }
    const rows = (
      await h.pool.query<{ recipient: string; status: string; attempts: number }>(
        'SELECT recipient, status, attempts FROM alert_emails WHERE alert_id = $1 ORDER BY recipient',
        [alert!.id],
      )
    ).rows;
    expect(rows).toEqual(
      [ada.email, bob.email].sort().map((recipient) => ({ recipient, status: 'sent', attempts: 1 })),
    );
    await Promise.all(both.map((r) => r.stop()));
  });

  it('an SMTP server that refuses is retried, and the email arrives once when one takes it; key.budget_reached is mailed too', async () => {
    const { accountId, keyId } = await h.account({ credits: 100 });
    const ada = await userOf(h, accountId);
    const nowhere = relay(`smtp://127.0.0.1:${await freePort()}`);
    const budget = await h.app.inject({
      method: 'PUT',
      url: `/admin/v1/keys/${keyId}/budget`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { maxCredits: 6, period: 'month' },
    });
    expect(budget.statusCode).toBe(200);
    await Promise.all(
      Array.from({ length: 3 }, () =>
        admit(h.pool, [
          {
            id: newId('gen'),
            accountId,
            apiKeyId: keyId,
            kind: 'image',
            model: 'image-flux',
            params: {},
            internal: {},
            prompt: 'a budgeted lighthouse',
            quoteMc: 3_000,
            budgeted: true,
          },
        ]),
      ),
    );
    const failing = await eventually(async () => {
      const r = (
        await h.pool.query<{ status: string; attempts: number; last_error: string }>(
          'SELECT m.status, m.attempts, m.last_error FROM alert_emails m JOIN account_alerts a ON a.id = m.alert_id WHERE a.account_id = $1',
          [accountId],
        )
      ).rows[0];
      return r && r.attempts >= 1 ? r : undefined;
    });
    expect(failing.status).toBe('pending');
    expect(failing.last_error).toMatch(/ECONNREFUSED|connect/i);
    expect((await smtp.messages()).filter(to(ada.email))).toEqual([]);

    await nowhere.stop();
    relay(smtp.smtpUrl);
    const [mail] = await eventually(async () => {
      const m = (await smtp.messages()).filter(to(ada.email));
      return m.length > 0 ? m : undefined;
    });
    expect(mail!.Subject).toBe(`Key budget reached: ${keyId}`);
    expect(await smtp.text(mail!.ID)).toContain(`has spent 6 credits of its 6 credits budget this month (UTC)`);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await smtp.messages()).filter(to(ada.email))).toHaveLength(1);
  });
});
