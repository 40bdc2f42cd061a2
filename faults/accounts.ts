// Money coming in and spending limits under the same faults: a key with a budget that the
// workload overruns (402 budget_exceeded, never an overshoot), and the poor account topped up
// during the run by Stripe's signed events, each delivered twice at once and once more later (the
// payment credited once), one of them refunded in part (debited once, never below what is held).
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import Stripe from 'stripe';
import { expectStatus } from '../bench/http';
import type { Http } from '../bench/http';
import type { Outcome } from './client';
import type { Check } from './ledger-checks';

/** What the service needs to take Stripe's events; its API is never called by the run (no checkout). */
export function billingEnv(webhookSecret: string): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: `sk_test_faults_${randomBytes(6).toString('hex')}`,
    STRIPE_WEBHOOK_SECRET: webhookSecret,
  };
}

export const BUDGET_CREDITS = 60;

/** A new key of the account with a budget of BUDGET_CREDITS in total; its token and id. */
export async function openBudgetedKey(
  http: Http,
  adminToken: string,
  accountId: string,
): Promise<{ id: string; key: string }> {
  const key = await expectStatus<{ id: string; key: string }>(
    http.request('POST', `/admin/v1/accounts/${accountId}/keys`, {
      token: adminToken,
      body: { scopes: ['image', 'video', 'chat', 'upscale'] },
    }),
    201,
    'create the budgeted key',
  );
  await expectStatus(
    http.request('PUT', `/admin/v1/keys/${key.id}/budget`, {
      token: adminToken,
      body: { maxCredits: BUDGET_CREDITS, period: 'none' },
    }),
    200,
    'set the key budget',
  );
  return key;
}

export const CUSTOMER_BUDGET_CREDITS = 80;

/** Gives the account's customer `customer` a budget of CUSTOMER_BUDGET_CREDITS in total, through a key with the customers scope. */
export async function capCustomer(http: Http, adminToken: string, accountId: string, customer: string): Promise<void> {
  const key = await expectStatus<{ id: string; key: string }>(
    http.request('POST', `/admin/v1/accounts/${accountId}/keys`, {
      token: adminToken,
      body: { scopes: ['customers'] },
    }),
    201,
    'create the customers key',
  );
  await expectStatus(
    http.request('PUT', `/api/v1/customers/${encodeURIComponent(customer)}/limits`, {
      token: key.key,
      body: { budget: { maxCredits: CUSTOMER_BUDGET_CREDITS, period: 'none' } },
    }),
    200,
    'set the customer budget',
  );
}

interface Delivery {
  session: string;
  event: string;
  status: number | 'dropped';
  outcome?: string;
}

export interface TopUps {
  /** Resolves once every planned delivery was made (or the run was interrupted). */
  done: Promise<void>;
  deliveries: Delivery[];
  sessions: { id: string; paymentIntent: string; credits: number }[];
  refund: { paymentIntent: string; refundedCents: number } | undefined;
}

const TOP_UP_CREDITS = 40;

/**
 * Every `everyMs` until `untilMs` after the start, a paid Checkout Session of the account: its
 * checkout.session.completed event twice at once, then again 5 s later, as Stripe redelivers. The
 * second payment is refunded by half, that event twice.
 */
export function runTopUps(o: {
  baseUrl: string;
  webhookSecret: string;
  accountId: string;
  everyMs: number;
  untilMs: number;
  signal: AbortSignal;
}): TopUps {
  const stripe = new Stripe('sk_test_faults_signer');
  const deliveries: Delivery[] = [];
  const sessions: TopUps['sessions'] = [];
  const result: TopUps = { done: Promise.resolve(), deliveries, sessions, refund: undefined };

  const deliver = async (session: string, event: Record<string, unknown>): Promise<void> => {
    const payload = JSON.stringify(event);
    const header = stripe.webhooks.generateTestHeaderString({ payload, secret: o.webhookSecret });
    const delivery: Delivery = { session, event: String(event.id), status: 'dropped' };
    deliveries.push(delivery);
    // Stripe retries a delivery that failed; so does the run, until one is answered.
    for (let attempt = 0; attempt < 30 && !o.signal.aborted; attempt++) {
      try {
        const res = await fetch(`${o.baseUrl}/api/v1/billing/stripe/webhook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'stripe-signature': header },
          body: payload,
          signal: AbortSignal.any([o.signal, AbortSignal.timeout(30_000)]),
        });
        delivery.status = res.status;
        const body = (await res.json().catch(() => ({}))) as { outcome?: string };
        if (body.outcome) delivery.outcome = body.outcome;
        if (res.status < 500) return;
      } catch {
        delivery.status = 'dropped';
      }
      await sleep(2_000, undefined, { signal: o.signal }).catch(() => undefined);
    }
  };

  const paid = (n: number) => {
    const id = `cs_test_faults_${randomBytes(6).toString('hex')}_${n}`;
    const paymentIntent = `pi_test_faults_${randomBytes(6).toString('hex')}_${n}`;
    sessions.push({ id, paymentIntent, credits: TOP_UP_CREDITS });
    return {
      session: id,
      paymentIntent,
      event: {
        id: `evt_test_faults_${randomBytes(6).toString('hex')}`,
        object: 'event',
        type: 'checkout.session.completed',
        api_version: '2025-10-29.clover',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        data: {
          object: {
            id,
            object: 'checkout.session',
            mode: 'payment',
            payment_status: 'paid',
            status: 'complete',
            currency: 'eur',
            amount_total: TOP_UP_CREDITS,
            client_reference_id: o.accountId,
            metadata: { accountId: o.accountId, credits: String(TOP_UP_CREDITS) },
            payment_intent: paymentIntent,
          },
        },
      },
    };
  };

  result.done = (async () => {
    const started = Date.now();
    const pending: Promise<void>[] = [];
    for (let n = 0; Date.now() - started < o.untilMs && !o.signal.aborted; n++) {
      const p = paid(n);
      pending.push(
        Promise.all([deliver(p.session, p.event), deliver(p.session, p.event)]).then(async () => {
          await sleep(5_000, undefined, { signal: o.signal }).catch(() => undefined);
          await deliver(p.session, p.event);
          if (n !== 1) return;
          const refundedCents = TOP_UP_CREDITS / 2;
          result.refund = { paymentIntent: p.paymentIntent, refundedCents };
          const refund = {
            id: `evt_test_faults_${randomBytes(6).toString('hex')}`,
            object: 'event',
            type: 'charge.refunded',
            api_version: '2025-10-29.clover',
            created: Math.floor(Date.now() / 1000),
            livemode: false,
            data: {
              object: {
                id: `ch_test_faults_${n}`,
                object: 'charge',
                amount: TOP_UP_CREDITS,
                amount_refunded: refundedCents,
                currency: 'eur',
                payment_intent: p.paymentIntent,
                refunded: false,
              },
            },
          };
          await Promise.all([deliver(p.session, refund), deliver(p.session, refund)]);
        }),
      );
      await sleep(o.everyMs, undefined, { signal: o.signal }).catch(() => undefined);
    }
    await Promise.all(pending);
  })();
  return result;
}

/** Each payment credited exactly once whatever the deliveries, the refund debited once, and the answers say so. */
export async function topUpChecks(db: pg.Pool, t: TopUps): Promise<Check[]> {
  const rows = await db.query<{ session: string; credits: number; payments: number }>(
    `WITH credits AS (
       SELECT substring(note FROM 'topup stripe (cs_[^ ]+)') AS session, count(*)::int AS credits
         FROM ledger_entries WHERE entry = 'credit' AND note LIKE 'topup stripe cs_test_faults_%' GROUP BY 1)
     SELECT c.session, c.credits, (SELECT count(*) FROM stripe_payments p WHERE p.checkout_session_id = c.session)::int AS payments FROM credits c`,
  );
  const credited = new Map(rows.rows.map((r) => [r.session, r]));
  const wrong = t.sessions.flatMap((s) => {
    const r = credited.get(s.id);
    const answers = t.deliveries.filter(
      (d) => d.session === s.id && d.event.startsWith('evt_') && d.outcome !== undefined,
    );
    const said = answers.filter((d) => d.outcome === 'credited').length;
    if (!r) return [`${s.id}: never credited`];
    if (r.credits !== 1 || r.payments !== 1)
      return [`${s.id}: ${r.credits} credit entries, ${r.payments} payment rows`];
    if (said > 1) return [`${s.id}: answered "credited" ${said} times`];
    return [];
  });
  const deliveries = t.deliveries.length;
  const checks: Check[] = [
    {
      name: 'each top-up credited once, however often Stripe delivers it',
      ok: t.sessions.length > 0 && wrong.length === 0,
      detail:
        wrong.length > 0
          ? `${wrong.length} wrong: ${wrong.slice(0, 5).join('; ')}`
          : `${t.sessions.length} payments, ${deliveries} deliveries (${t.deliveries.filter((d) => d.outcome === 'already').length} answered "already")`,
    },
  ];
  if (t.refund) {
    const refund = await db.query<{ entries: number; debited_mc: number; refunded_cents: number }>(
      `SELECT (SELECT count(*) FROM ledger_entries WHERE entry = 'refund' AND note LIKE 'refund stripe ' || $1 || '%')::int AS entries,
              p.debited_mc, p.refunded_cents
         FROM stripe_payments p WHERE p.payment_intent_id = $1`,
      [t.refund.paymentIntent],
    );
    const r = refund.rows[0];
    const owedMc = t.refund.refundedCents * 1000;
    checks.push({
      name: 'a refund debited once, never more than refunded',
      ok:
        r !== undefined &&
        r.entries === 1 &&
        r.refunded_cents === t.refund.refundedCents &&
        Number(r.debited_mc) <= owedMc,
      detail: r
        ? `${r.entries} refund entries, ${Number(r.debited_mc) / 1000} of ${owedMc / 1000} credits debited${Number(r.debited_mc) < owedMc ? ' (the rest was held or spent)' : ''}`
        : 'the refunded payment is missing',
    });
  }
  return checks;
}

/** What the budgeted key was charged and holds stays within its budget; it was overrun and refused. */
export async function budgetCheck(db: pg.Pool, keyId: string, outcomes: Outcome[]): Promise<Check> {
  const r = await db.query<{ spent_mc: string; generations: number }>(
    `SELECT COALESCE(sum(CASE WHEN h.state = 'held' THEN h.amount_mc WHEN h.state = 'settled' THEN h.charged_mc ELSE 0 END), 0)::bigint AS spent_mc,
            count(*)::int AS generations
       FROM generations g JOIN holds h ON h.generation_id = g.id WHERE g.api_key_id = $1`,
    [keyId],
  );
  const spent = Number(r.rows[0]!.spent_mc) / 1000;
  const mine = outcomes.filter((o) => o.request.budgeted);
  const refused = mine.filter((o) => o.final.status === 402 && o.final.detail === 'budget_exceeded').length;
  return {
    name: 'a key budget is never overrun, and refuses past it',
    ok: spent <= BUDGET_CREDITS && refused > 0,
    detail: `${spent} of ${BUDGET_CREDITS} credits spent by ${r.rows[0]!.generations} generations; ${refused} of ${mine.length} requests refused budget_exceeded`,
  };
}

/** What the capped customer's generations were charged and hold stays within its budget; it was overrun and refused. */
export async function customerBudgetCheck(
  db: pg.Pool,
  accountId: string,
  customer: string,
  outcomes: Outcome[],
): Promise<Check> {
  const r = await db.query<{ spent_mc: string; generations: number }>(
    `SELECT COALESCE(sum(CASE WHEN h.state = 'held' THEN h.amount_mc WHEN h.state = 'settled' THEN h.charged_mc ELSE 0 END), 0)::bigint AS spent_mc,
            count(*)::int AS generations
       FROM generations g JOIN holds h ON h.generation_id = g.id WHERE g.account_id = $1 AND g.customer_id = $2`,
    [accountId, customer],
  );
  const spent = Number(r.rows[0]!.spent_mc) / 1000;
  const mine = outcomes.filter((o) => o.request.customer === customer);
  const refused = mine.filter((o) => o.final.status === 402 && o.final.detail === 'customer_budget_exceeded').length;
  return {
    name: 'a customer budget is never overrun, and refuses past it',
    ok: spent <= CUSTOMER_BUDGET_CREDITS && refused > 0,
    detail: `${spent} of ${CUSTOMER_BUDGET_CREDITS} credits spent by ${r.rows[0]!.generations} generations; ${refused} of ${mine.length} requests refused customer_budget_exceeded`,
  };
}
