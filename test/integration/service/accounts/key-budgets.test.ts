// Per-key budgets, counted when a hold is placed: two real API processes admit 200
// concurrent requests of one key against a budget that affords 37 of them, and exactly 37 are
// held. No worker runs, so every admitted generation keeps its hold while the count is read.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { release, settle } from '../../../../core/ledger';
import { createProcessGroup, http, twoApiProcesses } from '../../../support/app-processes';
import { createDatabase, databaseUrlFor, dropDatabase } from '../../../support/harness';

const ADMIN_TOKEN = 'key-budgets-admin-token-0123456789';
const STARTUP_MS = 90_000;
const IMAGE_CREDITS = 3; // flux, one image
const AFFORDABLE = 37;
const REQUESTS = 200;

const group = createProcessGroup();
const explained = <T>(work: () => Promise<T>) => group.explained('key-budgets test', work);
const name = `t_budget_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const dataRoot = join(inject('testDataDir'), name);
let databaseCreated = false;
let bases: [string, string];
let pool: pg.Pool | undefined;

beforeAll(async () => {
  await explained(async () => {
    await createDatabase(name);
    databaseCreated = true;
    pool = new pg.Pool({ connectionString: databaseUrlFor(name), max: 4 });
    bases = await twoApiProcesses(group, {
      name,
      databaseUrl: databaseUrlFor(name),
      temporalAddress: inject('temporalAddress'),
      adminToken: ADMIN_TOKEN,
      dataRoot,
      startupMs: STARTUP_MS,
    });
  });
}, STARTUP_MS + 30_000);

afterAll(async () => {
  await group.killAll();
  await pool?.end();
  if (databaseCreated) await dropDatabase(name);
});

interface ErrorBody {
  error: { type: string; code: number; message: string; required?: number; available?: number };
}

async function budgetedKey(budget: { maxCredits: number; period: string }) {
  const account = await http<{ id: string }>(bases[0], 'POST', '/admin/v1/accounts', {
    token: ADMIN_TOKEN,
    body: { plan: 'samurai', credits: 10_000, chatCap: 0 },
  });
  expect(account.status, JSON.stringify(account.body)).toBe(201);
  const key = await http<{ id: string; key: string }>(bases[1], 'POST', `/admin/v1/accounts/${account.body.id}/keys`, {
    token: ADMIN_TOKEN,
    body: { scopes: ['image'] },
  });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const set = await fetch(`${bases[1]}/admin/v1/keys/${key.body.id}/budget`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(budget),
  });
  expect(set.status).toBe(200);
  expect(await set.json()).toMatchObject({
    keyId: key.body.id,
    ...budget,
    spentCredits: 0,
    availableCredits: budget.maxCredits,
  });
  return { accountId: account.body.id, keyId: key.body.id, key: key.body.key };
}

/** One image submit that answers at once (`respond-async`): 202 once held, whatever the worker does. */
async function submit(base: string, key: string, body: Record<string, unknown> = {}) {
  const res = await fetch(`${base}/api/v1/generate`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'respond-async' },
    body: JSON.stringify({ kind: 'image', model: 'flux', prompt: 'a lighthouse', ...body }),
  });
  return { status: res.status, body: (await res.json()) as { id: string } & ErrorBody };
}

const heldOf = async (keyId: string) =>
  (
    await pool!.query<{ n: number; held: number }>(
      `SELECT count(*)::int AS n, COALESCE(sum(h.amount_mc), 0)::bigint AS held FROM holds h JOIN generations g ON g.id = h.generation_id
    WHERE g.api_key_id = $1 AND h.state = 'held'`,
      [keyId],
    )
  ).rows[0]!;

describe('a key budget, across two API processes', () => {
  it(`admits exactly ${AFFORDABLE} of ${REQUESTS} concurrent requests against a budget for ${AFFORDABLE}, refuses the rest with 402 budget_exceeded, and gives back what is released`, async () => {
    await explained(async () => {
      const { accountId, keyId, key } = await budgetedKey({ maxCredits: AFFORDABLE * IMAGE_CREDITS, period: 'day' });
      const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => submit(bases[i % 2]!, key)));
      const admitted = answers.filter((a) => a.status === 202);
      const refused = answers.filter((a) => a.status === 402);
      expect(answers.filter((a) => a.status !== 202 && a.status !== 402).map((a) => a.body)).toEqual([]);
      expect(admitted).toHaveLength(AFFORDABLE);
      expect(refused).toHaveLength(REQUESTS - AFFORDABLE);
      // Both processes admitted some: the count is shared, not per process.
      expect(new Set(answers.map((a, i) => (a.status === 202 ? i % 2 : -1)).filter((p) => p >= 0)).size).toBe(2);
      for (const r of refused) {
        expect(r.body.error).toMatchObject({
          type: 'budget_exceeded',
          code: 402,
          required: IMAGE_CREDITS,
          available: 0,
        });
        expect(r.body.error.message).toContain(`${IMAGE_CREDITS} required, 0 available`);
      }
      expect(await heldOf(keyId)).toEqual({ n: AFFORDABLE, held: AFFORDABLE * IMAGE_CREDITS * 1000 });
      // Refusals charged and held nothing: the account's money moved by the admitted holds only.
      const money = (
        await pool!.query<{ balance_mc: number; held_mc: number }>(
          'SELECT balance_mc, held_mc FROM accounts WHERE id = $1',
          [accountId],
        )
      ).rows[0]!;
      expect(money).toEqual({ balance_mc: 10_000_000, held_mc: AFFORDABLE * IMAGE_CREDITS * 1000 });

      // A released hold gives its budget back; a charge counts only what it charged.
      const [first, second] = admitted.map((a) => a.body.id);
      await release(pool!, first!, { code: 'cancelled', message: 'test', retryable: false });
      await settle(pool!, { generationId: second!, chargeMc: 1000, outputKey: null, outputText: null });
      // 3 + 2 credits back: one more image fits, then 2 credits are left, less than an image.
      expect((await submit(bases[0], key)).status).toBe(202);
      const over = await submit(bases[1], key);
      expect(over.status).toBe(402);
      expect(over.body.error).toMatchObject({ type: 'budget_exceeded', required: 3, available: 2 });

      // The key list of the dashboard and the budget answer agree on what was spent.
      const view = await fetch(`${bases[0]}/admin/v1/keys/${keyId}/budget`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ maxCredits: 200, period: 'day' }),
      });
      const budget = (await view.json()) as { spentCredits: number; availableCredits: number; resetsAt: string };
      expect(budget).toMatchObject({
        spentCredits: AFFORDABLE * IMAGE_CREDITS - 2,
        availableCredits: 200 - (AFFORDABLE * IMAGE_CREDITS - 2),
      });
      const midnight = new Date();
      midnight.setUTCHours(24, 0, 0, 0);
      expect(budget.resetsAt).toBe(midnight.toISOString());

      // Without a budget the key is held by the balance alone again.
      const removed = await fetch(`${bases[0]}/admin/v1/keys/${keyId}/budget`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(removed.status).toBe(200);
      expect((await submit(bases[1], key)).status).toBe(202);
    });
  }, 120_000);

  it('a budget of another period starts again at its boundary: spending before the period started does not count', async () => {
    await explained(async () => {
      const { keyId, key } = await budgetedKey({ maxCredits: IMAGE_CREDITS, period: 'month' });
      const one = await submit(bases[0], key);
      expect(one.status).toBe(202);
      expect((await submit(bases[1], key)).status).toBe(402);
      // The hold moved into last month (as if placed then): this month's budget is whole again.
      await pool!.query(
        `UPDATE generations SET created_at = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 second' WHERE id = $1`,
        [one.body.id],
      );
      expect((await submit(bases[1], key)).status).toBe(202);
      expect((await heldOf(keyId)).n).toBe(2);
    });
  });

  it('a budget for ever (period none) counts everything the key ever spent, however old', async () => {
    await explained(async () => {
      const { keyId, key } = await budgetedKey({ maxCredits: IMAGE_CREDITS, period: 'none' });
      const one = await submit(bases[0], key);
      expect(one.status).toBe(202);
      await pool!.query(`UPDATE generations SET created_at = now() - interval '3 years' WHERE id = $1`, [one.body.id]);
      const over = await submit(bases[1], key);
      expect(over.status).toBe(402);
      expect(over.body.error.type).toBe('budget_exceeded');
      const view = await fetch(`${bases[1]}/admin/v1/keys/${keyId}/budget`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ maxCredits: IMAGE_CREDITS, period: 'none' }),
      });
      expect(await view.json()).toMatchObject({
        period: 'none',
        periodStart: null,
        spentCredits: IMAGE_CREDITS,
        availableCredits: 0,
      });
    });
  });

  it('an unknown key, or a budget that is not a number, is refused in the documented shape', async () => {
    const put = (id: string, body: unknown) =>
      fetch(`${bases[0]}/admin/v1/keys/${id}/budget`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const missing = await put('key_nope', { maxCredits: 5, period: 'day' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as ErrorBody).error).toMatchObject({ type: 'not_found', code: 404 });
    const bad = await put('key_nope', { maxCredits: 5, period: 'year' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error).toMatchObject({ type: 'invalid_request_error', code: 400 });
  });
});
