/**
 * Alerts: `balance.low` once per crossing of the account's threshold, detected by the
 * transaction that holds, under concurrency against real PostgreSQL; `key.budget_reached` once per
 * key, period and budget; both delivered as webhooks to the endpoints that list them, in both
 * payload formats, signed (checked with node:crypto and the `standardwebhooks` package).
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../../core/ids';
import { admit, release } from '../../../../core/ledger';
import { ADMIN_TOKEN, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { createConformance, loadDocument } from '../../../support/openapi';
import { eventOf, receiverPool } from '../../../support/webhook-receiver';
import type { Received } from '../../../support/webhook-receiver';

let h: Harness;
let c: ReturnType<typeof createConformance>;
const receivers = receiverPool();
const receiver = receivers.start;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000, webhooks: { retryScheduleMs: [150, 300, 600] } });
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await receivers.closeAll();
  await h?.close();
});

const adminPut = (url: string, body: unknown) =>
  h.app.inject({ method: 'PUT', url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: body as object });

const register = async (key: string, body: Record<string, unknown>) =>
  c.conforms<{ id: string; secret: string }>(
    await h.call('POST', '/api/v1/webhooks', { key, body }),
    'post',
    '/api/v1/webhooks',
    201,
  );

/** Verified twice, independently of the code under test: the spec's HMAC with node:crypto, and Standard Webhooks' own library. */
function expectSigned(r: Received, secret: string): void {
  const parts = String(r.headers['x-service-signature']).split(',');
  const t = parts.find((p) => p.startsWith('t='))!.slice(2);
  const v1 = parts.filter((p) => p.startsWith('v1=')).map((p) => p.slice(3));
  expect(v1).toContain(createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${r.body}`).digest('hex'));
  expect(() => new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).not.toThrow();
  expect(() =>
    new Webhook(secret).verify(r.body.replace('"event":"', '"event":"x'), r.headers as Record<string, string>),
  ).toThrow();
}

const alertsOf = async (accountId: string, event: string) =>
  (
    await h.pool.query<{ id: string; amount_mc: number; limit_mc: number }>(
      'SELECT id, amount_mc, limit_mc FROM account_alerts WHERE account_id = $1 AND event = $2 ORDER BY id',
      [accountId, event],
    )
  ).rows;

/** `n` image holds of 3 credits placed at once, straight through the ledger (no workflow): what each answered. */
async function concurrentHolds(accountId: string, n: number) {
  const answers = await Promise.all(
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
  return answers.map((a) => (a.outcome === 'admitted' ? a.generations[0]!.id : a.outcome));
}

describe('balance.low', () => {
  it('is recorded exactly once per crossing under 40 concurrent holds, re-armed by a top-up, delivered signed in both formats to the endpoints that list it', async () => {
    const { accountId, key } = await h.account({ credits: 100 });
    const nestedHook = await receiver();
    const flatHook = await receiver();
    const silentHook = await receiver();
    const nested = await register(key, { url: nestedHook.url, events: ['generation.completed', 'balance.low'] });
    const flat = await register(key, {
      url: flatHook.url,
      format: 'flat',
      events: ['balance.low', 'key.budget_reached'],
    });
    await register(key, { url: silentHook.url }); // no list: its catalogue only, never an alert

    const set = await adminPut(`/admin/v1/accounts/${accountId}/low-balance`, { thresholdCredits: 50 });
    expect(c.conforms(set, 'put', '/admin/v1/accounts/{id}/low-balance', 200)).toEqual({
      thresholdCredits: 50,
      data: [],
    });

    // 100 credits, 3 a hold: 33 fit, the balance crosses 50 once on the way down.
    const first = await concurrentHolds(accountId, 40);
    expect(first.filter((a) => a.startsWith('gen_'))).toHaveLength(33);
    expect(first.filter((a) => a === 'refused')).toHaveLength(7);
    const once = await alertsOf(accountId, 'balance.low');
    expect(once).toHaveLength(1);
    expect(once[0]!.limit_mc).toBe(50_000);
    expect(once[0]!.amount_mc).toBeLessThan(50_000);
    expect(once[0]!.amount_mc).toBeGreaterThanOrEqual(47_000);

    // Releasing the holds lifts the available credits above the threshold but does not re-arm it.
    await Promise.all(
      first
        .filter((a) => a.startsWith('gen_'))
        .map((id) => release(h.pool, id, { code: 'cancelled', message: 'test', retryable: false })),
    );
    expect((await concurrentHolds(accountId, 40)).filter((a) => a.startsWith('gen_'))).toHaveLength(33);
    expect(await alertsOf(accountId, 'balance.low')).toHaveLength(1);

    // Money coming in that lifts it back to the threshold re-arms it: the next crossing is announced once more.
    c.conforms(
      await h.admin('POST', `/admin/v1/accounts/${accountId}/credits`, { credits: 99 }),
      'post',
      '/admin/v1/accounts/{id}/credits',
      200,
    );
    expect((await concurrentHolds(accountId, 40)).filter((a) => a.startsWith('gen_'))).toHaveLength(33);
    const twice = await alertsOf(accountId, 'balance.low');
    expect(twice).toHaveLength(2);

    const nestedGot = await nestedHook.until(2, eventOf('balance.low'));
    const flatGot = await flatHook.until(2, eventOf('balance.low'));
    for (const r of nestedGot) expectSigned(r, nested.secret);
    for (const r of flatGot) expectSigned(r, flat.secret);
    const byAlert = (got: Received[], field: (r: Received) => unknown) => got.map(field).sort();
    expect(byAlert(nestedGot, (r) => (r.json.alert as { id: string }).id)).toEqual(twice.map((a) => a.id));
    expect(byAlert(flatGot, (r) => r.json.alert_id)).toEqual(twice.map((a) => a.id));
    const firstNested = nestedGot.find((r) => (r.json.alert as { id: string }).id === twice[0]!.id)!;
    expect(firstNested.json).toEqual({
      event: 'balance.low',
      alert: {
        id: twice[0]!.id,
        accountId,
        availableCredits: twice[0]!.amount_mc / 1000,
        thresholdCredits: 50,
        createdAt: expect.any(String),
      },
    });
    expect(firstNested.headers['x-service-event']).toBe('balance.low');
    const firstFlat = flatGot.find((r) => r.json.alert_id === twice[0]!.id)!;
    expect(firstFlat.json).toEqual({
      event: 'balance.low',
      alert_id: twice[0]!.id,
      account_id: accountId,
      available_credits: twice[0]!.amount_mc / 1000,
      threshold_credits: 50,
      created_at: expect.any(String),
    });
    // Exactly once each: nothing more arrives, and the endpoint without a list got no alert at all.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(nestedHook.received.filter(eventOf('balance.low'))).toHaveLength(2);
    expect(flatHook.received.filter(eventOf('balance.low'))).toHaveLength(2);
    expect(
      silentHook.received.filter(
        (r) => String(r.json.event).includes('.low') || String(r.json.event).startsWith('key.'),
      ),
    ).toEqual([]);

    // The operator reads them back; the account's money is what the ledger says.
    const listed = c.conforms<{ data: { id: string; event: string }[] }>(
      await h.admin('GET', `/admin/v1/accounts/${accountId}/alerts`),
      'get',
      '/admin/v1/accounts/{id}/alerts',
      200,
    );
    expect(listed.data.map((a) => a.id)).toEqual(twice.map((a) => a.id).reverse());
  }, 120_000);

  it('refuses a bad threshold with the documented error shape, and an unknown account with 404', async () => {
    const { accountId } = await h.account({ credits: 10 });
    const bad = c.conforms<{ error: { type: string; param: string } }>(
      await adminPut(`/admin/v1/accounts/${accountId}/low-balance`, { thresholdCredits: -1 }),
      'put',
      '/admin/v1/accounts/{id}/low-balance',
      400,
    );
    expect(bad.error.type).toBe('invalid_request_error');
    c.conforms(
      await adminPut('/admin/v1/accounts/acct_nope/low-balance', { thresholdCredits: 5 }),
      'put',
      '/admin/v1/accounts/{id}/low-balance',
      404,
    );
    // A threshold set above what is available announces nothing until the credits have been back above it.
    c.conforms(
      await adminPut(`/admin/v1/accounts/${accountId}/low-balance`, { thresholdCredits: 20 }),
      'put',
      '/admin/v1/accounts/{id}/low-balance',
      200,
    );
    await concurrentHolds(accountId, 2);
    expect(await alertsOf(accountId, 'balance.low')).toEqual([]);
  });
});

describe('key.budget_reached', () => {
  const setBudget = (keyId: string, body: unknown) => adminPut(`/admin/v1/keys/${keyId}/budget`, body);
  const submit = (key: string) =>
    h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'a budgeted lighthouse' },
      headers: { prefer: 'respond-async' },
    });

  it('is recorded once per key and period when a hold uses the budget up, or when the budget refuses a hold; delivered in both formats', async () => {
    const { accountId, key, keyId } = await h.account({ credits: 1_000 });
    const nestedHook = await receiver();
    const flatHook = await receiver();
    const nested = await register(key, { url: nestedHook.url, events: ['key.budget_reached'] });
    const flat = await register(key, { url: flatHook.url, format: 'flat', events: ['key.budget_reached'] });

    // Refused first: 10 credits a day, 3 an image: the fourth hold does not fit.
    expect((await setBudget(keyId, { maxCredits: 10, period: 'day' })).statusCode).toBe(200);
    const answers = await Promise.all(Array.from({ length: 8 }, () => submit(key)));
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(3);
    expect(
      answers.filter((a) => a.statusCode === 402).map((a) => a.json<{ error: { type: string } }>().error.type),
    ).toEqual(Array(5).fill('budget_exceeded'));
    const refused = await alertsOf(accountId, 'key.budget_reached');
    expect(refused).toEqual([{ id: expect.any(String), amount_mc: 9_000, limit_mc: 10_000 }]);

    // A new budget may be reached again; used up exactly by a hold this time (12 = 4 images), recorded with that hold.
    expect((await setBudget(keyId, { maxCredits: 12, period: 'day' })).statusCode).toBe(200);
    expect((await submit(key)).statusCode).toBe(202);
    const reached = await alertsOf(accountId, 'key.budget_reached');
    expect(reached).toHaveLength(2);
    expect(reached[1]).toMatchObject({ amount_mc: 12_000, limit_mc: 12_000 });
    expect((await submit(key)).statusCode).toBe(402);
    expect(await alertsOf(accountId, 'key.budget_reached')).toHaveLength(2);

    const nestedGot = await nestedHook.until(2, eventOf('key.budget_reached'));
    const flatGot = await flatHook.until(2, eventOf('key.budget_reached'));
    for (const r of nestedGot) expectSigned(r, nested.secret);
    for (const r of flatGot) expectSigned(r, flat.secret);
    const midnight = new Date();
    midnight.setUTCHours(0, 0, 0, 0);
    expect(nestedGot.map((r) => r.json).find((j) => (j.alert as { id: string }).id === reached[0]!.id)).toEqual({
      event: 'key.budget_reached',
      alert: {
        id: reached[0]!.id,
        accountId,
        keyId,
        spentCredits: 9,
        maxCredits: 10,
        period: 'day',
        periodStart: midnight.toISOString(),
        createdAt: expect.any(String),
      },
    });
    expect(flatGot.map((r) => r.json).find((j) => j.alert_id === reached[1]!.id)).toEqual({
      event: 'key.budget_reached',
      alert_id: reached[1]!.id,
      account_id: accountId,
      key_id: keyId,
      spent_credits: 12,
      max_credits: 12,
      period: 'day',
      period_start: midnight.toISOString(),
      created_at: expect.any(String),
    });
    await eventually(async () =>
      (
        await h.pool.query(
          "SELECT count(*)::int AS n FROM webhook_deliveries WHERE event = 'key.budget_reached' AND account_id = $1 AND status = 'succeeded'",
          [accountId],
        )
      ).rows[0]!.n === 4
        ? true
        : undefined,
    );
  }, 120_000);
});
