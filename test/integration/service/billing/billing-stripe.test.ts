// Buying credits with Stripe: Checkout Sessions created through the official SDK against
// a real stripe-mock, and webhook events signed by the SDK's own test-header helper. A paid session
// credits once however often and however concurrently it is delivered; a forged, altered or
// replayed event credits nothing; a refund debits what was refunded, never what is held.
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { startStripeMock } from '../../../support/stripe-mock-server';
import type { StripeMockServer } from '../../../support/stripe-mock-server';

const WEBHOOK_SECRET = 'whsec_test_billing_0123456789';
const stripe = new Stripe('sk_test_123');
let h: Harness;
let mock: StripeMockServer | undefined;
let app: FastifyInstance;

beforeAll(async () => {
  [h, mock] = await Promise.all([startHarness({ syncWaitMs: 20_000 }), startStripeMock()]);
  app = await productionApi(h, {
    syncWaitMs: 20_000,
    billing: {
      secretKey: 'sk_test_123',
      webhookSecret: WEBHOOK_SECRET,
      apiUrl: mock.url,
      minPurchaseCredits: 500,
      maxPurchaseCredits: 50_000,
    },
  });
});
afterAll(async () => {
  await app?.close();
  await h?.close();
  await mock?.stop();
});

const json = 'application/json';
const call = (method: 'GET' | 'POST', url: string, key: string, body?: unknown) =>
  app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { payload: body as object }),
  });

/** A Stripe event as Stripe sends it, signed as Stripe signs it (optionally at another time or with another secret). */
function signed(
  type: string,
  object: Record<string, unknown>,
  opts: { id?: string; secret?: string; timestamp?: number } = {},
) {
  const payload = JSON.stringify({
    id: opts.id ?? `evt_${Math.random().toString(36).slice(2)}`,
    object: 'event',
    type,
    api_version: '2025-01-01',
    created: Math.floor(Date.now() / 1000),
    data: { object },
  });
  const header = stripe.webhooks.generateTestHeaderString({
    payload,
    secret: opts.secret ?? WEBHOOK_SECRET,
    ...(opts.timestamp ? { timestamp: opts.timestamp } : {}),
  });
  return { payload, header };
}
const deliver = (e: { payload: string; header: string }, payload = e.payload) =>
  app.inject({
    method: 'POST',
    url: '/api/v1/billing/stripe/webhook',
    headers: { 'stripe-signature': e.header, 'content-type': json },
    payload,
  });

const paidSession = (accountId: string, credits: number, id: string, pi: string) => ({
  id,
  object: 'checkout.session',
  payment_status: 'paid',
  status: 'complete',
  amount_total: credits,
  currency: 'eur',
  client_reference_id: accountId,
  metadata: { accountId, credits: String(credits) },
  payment_intent: pi,
});
const balanceOf = async (key: string) =>
  (await call('GET', '/api/v1/balance', key)).json<{ balance: number; holdsActive: number }>();

describe('buying credits with Stripe', () => {
  it('answers a Checkout Session made through the SDK against stripe-mock; amounts outside the limits are a 400', async () => {
    const { key } = await h.account({ credits: 0 });
    const res = await call('POST', '/api/v1/billing/checkout', key, { credits: 1000 });
    expect(res.statusCode, res.body).toBe(200);
    const session = res.json<{ id: string; url: string }>();
    expect(session.id).toMatch(/^cs_/);
    expect(session.url).toMatch(/^https:\/\//);
    for (const credits of [10, 60_000, 12.5]) {
      const refused = await call('POST', '/api/v1/billing/checkout', key, { credits });
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'credits' } });
    }
    expect((await call('POST', '/api/v1/billing/checkout', 'gsk_nope', { credits: 1000 })).statusCode).toBe(401);
  });

  it('credits a paid session exactly once, whatever is redelivered concurrently; forged, altered and replayed events credit nothing', async () => {
    const { key, accountId } = await h.account({ credits: 0 });
    const event = signed('checkout.session.completed', paidSession(accountId, 1000, 'cs_test_once', 'pi_test_once'), {
      id: 'evt_once',
    });
    const answers = await Promise.all(Array.from({ length: 8 }, () => deliver(event)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(8).fill(200));
    expect(answers.map((a) => a.json<{ outcome: string }>().outcome).sort()).toEqual([
      'already',
      'already',
      'already',
      'already',
      'already',
      'already',
      'already',
      'credited',
    ]);
    // The same payment in another event (Stripe may send both completed and async_payment_succeeded).
    expect(
      (
        await deliver(
          signed(
            'checkout.session.async_payment_succeeded',
            paidSession(accountId, 1000, 'cs_test_once', 'pi_test_once'),
          ),
        )
      ).json(),
    ).toMatchObject({ outcome: 'already' });
    expect(await balanceOf(key)).toMatchObject({ balance: 1000 });

    const forged = signed(
      'checkout.session.completed',
      paidSession(accountId, 5000, 'cs_test_forged', 'pi_test_forged'),
      { secret: 'whsec_someone_else_0123' },
    );
    const altered = signed(
      'checkout.session.completed',
      paidSession(accountId, 500, 'cs_test_altered', 'pi_test_altered'),
    );
    const replayed = signed('checkout.session.completed', paidSession(accountId, 700, 'cs_test_old', 'pi_test_old'), {
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    for (const [e, body] of [
      [forged, forged.payload],
      [altered, altered.payload.replace('"credits":"500"', '"credits":"50000"')],
      [replayed, replayed.payload],
    ] as const) {
      const res = await deliver(e, body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        error: { type: 'invalid_request_error', code: 400, param: 'Stripe-Signature' },
      });
    }
    const unsigned = await app.inject({
      method: 'POST',
      url: '/api/v1/billing/stripe/webhook',
      headers: { 'content-type': json },
      payload: altered.payload,
    });
    expect(unsigned.statusCode).toBe(400);
    // A session that does not add up (paid amount unlike the credits) is not ours to credit.
    const odd = signed('checkout.session.completed', {
      ...paidSession(accountId, 900, 'cs_test_odd', 'pi_test_odd'),
      amount_total: 1,
    });
    expect((await deliver(odd)).json()).toMatchObject({ outcome: 'ignored' });
    expect(await balanceOf(key)).toMatchObject({ balance: 1000 });

    const ledger = (await call('GET', '/api/v1/ledger', key)).json<{
      data: { type: string; amount: number; note: string }[];
    }>().data;
    expect(ledger.filter((e) => e.type === 'topup')).toEqual([
      expect.objectContaining({ amount: 1000, note: 'topup stripe cs_test_once pi_test_once' }),
    ]);
  });

  it('a refund debits what was refunded since the last one, never below what is held', async () => {
    const { key, accountId } = await h.account({ credits: 0 });
    expect(
      (
        await deliver(
          signed('checkout.session.completed', paidSession(accountId, 1000, 'cs_test_refund', 'pi_test_refund')),
        )
      ).json(),
    ).toMatchObject({ outcome: 'credited' });
    const video = await call('POST', '/api/v1/generate', key, {
      kind: 'video',
      model: 'kling',
      prompt: 'rain sim:delay=60000',
      seconds: 10,
      quality: '1080p',
    });
    expect(video.statusCode).toBe(202);
    expect(await balanceOf(key)).toEqual(expect.objectContaining({ balance: 870, holdsActive: 130 }));

    const refunded = (total: number) =>
      signed('charge.refunded', {
        id: 'ch_test_refund',
        object: 'charge',
        payment_intent: 'pi_test_refund',
        amount: 1000,
        amount_refunded: total,
        currency: 'eur',
      });
    const first = refunded(300);
    expect((await deliver(first)).json()).toMatchObject({ outcome: 'debited' });
    expect((await deliver(first)).json()).toMatchObject({ outcome: 'already' });
    expect(await balanceOf(key)).toEqual(expect.objectContaining({ balance: 570, holdsActive: 130 }));
    // The rest refunded: 700 owed, 570 free; the held 130 stays held.
    expect((await deliver(refunded(1000))).json()).toMatchObject({ outcome: 'debited' });
    expect(await balanceOf(key)).toEqual(expect.objectContaining({ balance: 0, holdsActive: 130 }));
    expect((await deliver(refunded(1000))).json()).toMatchObject({ outcome: 'already' });
    const refunds = (await call('GET', '/api/v1/ledger', key))
      .json<{ data: { type: string; amount: number }[] }>()
      .data.filter((e) => e.type === 'refund');
    expect(refunds.map((e) => e.amount)).toEqual([-570, -300]);
    await call('POST', `/api/v1/generations/${video.json<{ id: string }>().id}/cancel`, key);
  });
});

describe('without Stripe configured', () => {
  it('the billing routes do not exist', async () => {
    const { key } = await h.account({ credits: 0 });
    expect((await h.call('POST', '/api/v1/billing/checkout', { key, body: { credits: 1000 } })).statusCode).toBe(404);
    expect(
      (
        await h.app.inject({
          method: 'POST',
          url: '/api/v1/billing/stripe/webhook',
          payload: '{}',
          headers: { 'content-type': json },
        })
      ).statusCode,
    ).toBe(404);
  });
});
