// Budgets per customer (the platform's own end user), decided when a hold is placed: two real API
// processes admit 200 concurrent requests for one customer against a budget that affords 37 of
// them, and exactly 37 are held. No worker runs, so every admitted generation keeps its hold.
// Then: released holds give budget back, the customer is named in every view, usage per customer
// sums to the ledger, the changes are in the audit log, and another account cannot see or set it.
// Both processes share their rate windows through a real redis-server, as the plan limits do.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { release, settle } from '../../../../core/ledger';
import { createProcessGroup, http, twoApiProcesses } from '../../../support/app-processes';
import { createDatabase, databaseUrlFor, dropDatabase } from '../../../support/harness';
import { startRedis } from '../../../support/redis-server';
import type { RedisServer } from '../../../support/redis-server';

const ADMIN_TOKEN = 'customer-budgets-admin-token-0123456789';
const STARTUP_MS = 90_000;
const IMAGE_CREDITS = 3; // flux, one image
const AFFORDABLE = 37;
const REQUESTS = 200;

const group = createProcessGroup();
const explained = <T>(work: () => Promise<T>) => group.explained('customer-budgets test', work);
const name = `t_cbudget_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const dataRoot = join(inject('testDataDir'), name);
let databaseCreated = false;
let bases: [string, string];
let pool: pg.Pool | undefined;
let redis: RedisServer | undefined;

beforeAll(async () => {
  await explained(async () => {
    await createDatabase(name);
    databaseCreated = true;
    pool = new pg.Pool({ connectionString: databaseUrlFor(name), max: 4 });
    redis = await startRedis(join(dataRoot, 'redis'));
    bases = await twoApiProcesses(group, {
      name,
      databaseUrl: databaseUrlFor(name),
      temporalAddress: inject('temporalAddress'),
      adminToken: ADMIN_TOKEN,
      dataRoot,
      startupMs: STARTUP_MS,
      env: { REDIS_URL: redis.url },
    });
  });
}, STARTUP_MS + 30_000);

afterAll(async () => {
  await group.killAll();
  await pool?.end();
  await redis?.stop();
  if (databaseCreated) await dropDatabase(name);
});

interface ErrorBody {
  error: { type: string; code: number; message: string; customer?: string; required?: number; available?: number };
}

async function platform() {
  const account = await http<{ id: string }>(bases[0], 'POST', '/admin/v1/accounts', {
    token: ADMIN_TOKEN,
    body: { plan: 'samurai', credits: 10_000, chatCap: 0 },
  });
  expect(account.status, JSON.stringify(account.body)).toBe(201);
  const key = await http<{ id: string; key: string }>(bases[1], 'POST', `/admin/v1/accounts/${account.body.id}/keys`, {
    token: ADMIN_TOKEN,
    body: { scopes: ['image', 'customers', 'audit'] },
  });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  return { accountId: account.body.id, keyId: key.body.id, key: key.body.key };
}

async function call<T = unknown>(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as T & ErrorBody };
}

/** One image submit for `customer` (by header) that answers at once: 202 once held. */
async function submit(base: string, key: string, customer: string) {
  const res = await fetch(`${base}/api/v1/generate`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      prefer: 'respond-async',
      'x-customer-id': customer,
    },
    body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a lighthouse' }),
  });
  return { status: res.status, body: (await res.json()) as { id: string; customer?: string } & ErrorBody };
}

const heldFor = async (accountId: string, customer: string) =>
  (
    await pool!.query<{ n: number; held: string }>(
      `SELECT count(*)::int AS n, COALESCE(sum(h.amount_mc), 0)::text AS held FROM holds h JOIN generations g ON g.id = h.generation_id
    WHERE g.account_id = $1 AND g.customer_id = $2 AND h.state = 'held'`,
      [accountId, customer],
    )
  ).rows[0]!;

describe('a customer budget, across two API processes', () => {
  it(`admits exactly ${AFFORDABLE} of ${REQUESTS} concurrent requests for one customer, refuses the rest with 402 customer_budget_exceeded naming it, and gives back what is released`, async () => {
    await explained(async () => {
      const { accountId, key } = await platform();
      const customer = 'user-42@platform';
      // The account's default budget is small; this customer's own affords 37 images a day.
      expect(
        (
          await call(bases[0], key, 'PUT', '/api/v1/customer-defaults', {
            budget: { maxCredits: IMAGE_CREDITS, period: 'month' },
            rateLimitPerMinute: null,
          })
        ).status,
      ).toBe(200);
      const set = await call(bases[1], key, 'PUT', `/api/v1/customers/${encodeURIComponent(customer)}/limits`, {
        budget: { maxCredits: AFFORDABLE * IMAGE_CREDITS, period: 'day' },
      });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      expect(set.body).toMatchObject({
        customer,
        budget: { maxCredits: AFFORDABLE * IMAGE_CREDITS, period: 'day', spentCredits: 0, source: 'customer' },
      });

      const answers = await Promise.all(
        Array.from({ length: REQUESTS }, (_, i) => submit(bases[i % 2]!, key, customer)),
      );
      const admitted = answers.filter((a) => a.status === 202);
      const refused = answers.filter((a) => a.status === 402);
      expect(answers.filter((a) => a.status !== 202 && a.status !== 402).map((a) => a.body)).toEqual([]);
      expect(admitted).toHaveLength(AFFORDABLE);
      expect(refused).toHaveLength(REQUESTS - AFFORDABLE);
      expect(new Set(answers.map((a, i) => (a.status === 202 ? i % 2 : -1)).filter((p) => p >= 0)).size).toBe(2);
      for (const r of refused) {
        expect(r.body.error).toMatchObject({
          type: 'customer_budget_exceeded',
          code: 402,
          customer,
          required: IMAGE_CREDITS,
          available: 0,
        });
        expect(r.body.error.message).toContain(customer);
      }
      expect(await heldFor(accountId, customer)).toEqual({
        n: AFFORDABLE,
        held: String(AFFORDABLE * IMAGE_CREDITS * 1000),
      });
      const money = (
        await pool!.query<{ held_mc: string }>('SELECT held_mc::text FROM accounts WHERE id = $1', [accountId])
      ).rows[0]!;
      expect(money.held_mc).toBe(String(AFFORDABLE * IMAGE_CREDITS * 1000));

      // Another customer of the same account follows the default (one image a month), untouched by the first.
      expect((await submit(bases[0], key, 'someone-else')).status).toBe(202);
      const second = await submit(bases[1], key, 'someone-else');
      expect(second.status).toBe(402);
      expect(second.body.error).toMatchObject({ type: 'customer_budget_exceeded', customer: 'someone-else' });

      // A released hold gives its budget back; a charge counts what it charged.
      const [first, next] = admitted.map((a) => a.body.id);
      await release(pool!, first!, { code: 'cancelled', message: 'test', retryable: false });
      await settle(pool!, { generationId: next!, chargeMc: 1000, outputKey: null, outputText: null });
      // 3 released, 2 of the second's 3 left: the budget has 5 credits again, one image fits.
      expect((await submit(bases[0], key, customer)).status).toBe(202);
      const over = await submit(bases[1], key, customer);
      expect(over.body.error).toMatchObject({ type: 'customer_budget_exceeded', required: 3, available: 2 });

      // customer.budget_reached was recorded once for this customer's budget.
      const recorded = await pool!.query<{ customer_id: string }>(
        `SELECT customer_id FROM account_alerts WHERE account_id = $1 AND event = 'customer.budget_reached' ORDER BY customer_id`,
        [accountId],
      );
      expect(recorded.rows.map((r) => r.customer_id)).toEqual([customer, 'someone-else'].sort());

      // The customer in the generation, its list filter, the ledger and usage.
      const one = await call<{ customer: string }>(bases[1], key, 'GET', `/api/v1/generations/${next}`);
      expect(one.body.customer).toBe(customer);
      const list = await call<{ data: { customer: string }[] }>(
        bases[0],
        key,
        'GET',
        `/api/v1/generations?customer=${encodeURIComponent(customer)}&limit=100`,
      );
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      expect(list.body.data.length).toBe(AFFORDABLE + 1);
      expect(new Set(list.body.data.map((g) => g.customer))).toEqual(new Set([customer]));
      const charged = await call<{ data: { group: string; creditsCharged: number }[] }>(
        bases[1],
        key,
        'GET',
        '/api/v1/usage?group_by=customer',
      );
      expect(charged.status, JSON.stringify(charged.body)).toBe(200);
      const ledgerCharged = await pool!.query<{ customer_id: string; mc: string }>(
        `SELECT g.customer_id, sum(e.amount_mc)::text AS mc FROM ledger_entries e JOIN generations g ON g.id = e.generation_id
          WHERE g.account_id = $1 AND e.entry = 'charge' GROUP BY g.customer_id`,
        [accountId],
      );
      const byCustomer = Object.fromEntries(ledgerCharged.rows.map((r) => [r.customer_id, Number(r.mc) / 1000]));
      expect(
        Object.fromEntries(
          charged.body.data.filter((r) => r.creditsCharged > 0).map((r) => [r.group, r.creditsCharged]),
        ),
      ).toEqual(byCustomer);
      expect(byCustomer[customer]).toBe(1);

      // Every change is in the audit log, made by the key.
      const audit = await call<{
        data: { action: string; target: string | null; actor: { type: string; id: string } }[];
      }>(bases[0], key, 'GET', '/api/v1/audit-log');
      expect(audit.status, JSON.stringify(audit.body)).toBe(200);
      expect(audit.body.data.map((e) => [e.action, e.target, e.actor.type])).toEqual(
        expect.arrayContaining([
          ['customer_defaults.set', null, 'key'],
          ['customer.limits_set', customer, 'key'],
        ]),
      );
    });
  }, 240_000);

  it('a customer’s rate limit is shared by both processes: 5 a minute, the 6th refused with 429 on either', async () => {
    await explained(async () => {
      const { key } = await platform();
      const set = await call(bases[0], key, 'PUT', '/api/v1/customers/bursty/limits', { rateLimitPerMinute: 5 });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await submit(bases[i % 2]!, key, 'bursty')).status);
      expect(statuses).toEqual([202, 202, 202, 202, 202]);
      for (const base of bases) {
        const res = await submit(base, key, 'bursty');
        expect(res.status).toBe(429);
        expect(res.body.error.type).toBe('rate_limit_error');
      }
      // Another customer of the same account has its own window (and no limit).
      expect((await submit(bases[1], key, 'calm')).status).toBe(202);
    });
  }, 120_000);

  it('another account cannot read or set a customer of ours, and a key without the customers scope cannot either', async () => {
    await explained(async () => {
      const ours = await platform();
      const theirs = await platform();
      const customer = 'private-user';
      expect(
        (
          await call(bases[0], ours.key, 'PUT', `/api/v1/customers/${customer}/limits`, {
            budget: { maxCredits: 9, period: 'week' },
          })
        ).status,
      ).toBe(200);
      const read = await call(bases[1], theirs.key, 'GET', `/api/v1/customers/${customer}`);
      expect(read.status).toBe(404);
      expect(read.body.error.type).toBe('not_found');
      // Their "private-user" is a customer of their own: setting it leaves ours as it was.
      await call(bases[1], theirs.key, 'PUT', `/api/v1/customers/${customer}/limits`, { budget: null });
      const still = await call<{ budget: { maxCredits: number } }>(
        bases[0],
        ours.key,
        'GET',
        `/api/v1/customers/${customer}`,
      );
      expect(still.body.budget).toMatchObject({ maxCredits: 9, period: 'week', source: 'customer' });
      // Each account's audit log has its own change only (and the operator's creation of its key).
      const theirLog = await call<{ data: { action: string; target: string | null }[] }>(
        bases[1],
        theirs.key,
        'GET',
        '/api/v1/audit-log',
      );
      expect(theirLog.body.data.map((e) => [e.action, e.target])).toEqual([
        ['customer.limits_set', customer],
        ['key.created', theirs.keyId],
      ]);
      // A key without the scope is refused.
      const plain = await http<{ key: string }>(bases[0], 'POST', `/admin/v1/accounts/${ours.accountId}/keys`, {
        token: ADMIN_TOKEN,
        body: { scopes: ['image'] },
      });
      const refused = await call(bases[0], plain.body.key, 'GET', `/api/v1/customers/${customer}`);
      expect(refused.status).toBe(403);
      expect(refused.body.error.type).toBe('permission_error');
      expect((await call(bases[0], plain.body.key, 'GET', '/api/v1/audit-log')).status).toBe(403);
    });
  }, 120_000);
});
