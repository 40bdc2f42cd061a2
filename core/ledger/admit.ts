import type pg from 'pg';
import type { BudgetPeriod, KeyBudget } from '../db/budgets';
import { claimIdempotencyKey } from '../db/idempotency';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import { IdempotencyConflictError } from '../errors';
import { metrics } from '../metrics';
import { mcToCredits } from '../money';
import type { Millicredits } from '../money';
import type { InternalParams, PublicParams } from '../generation/params';
import type { GenerationKind, GenerationStatus } from '../vocabulary';
import { recordBalanceLow } from './alerts';
import { appendEntry } from './entries';
import type { AccountMoney } from './entries';
import { classified } from './failures';
import { notifyExpr } from '../db/notify';
import { insertJobCallback } from '../db/webhook-endpoints';
import { newId } from '../ids';
import type { JobCallback } from '../webhooks/job-callbacks';
import { owesEvent, recordStatusEvent } from './outbox';
import { ledgerSpan } from './span';
import { afterCustomerHold, checkCustomerBudget, customerBudgetRefused } from './customer-budgets';
import { afterKeyHold, checkKeyBudget, keyBudgetRefusal, keyBudgetRefused } from './key-budgets';
import type { KeyBudgetRefusal } from './key-budgets';
import type { CustomerBudget } from '../db/customers';

/** A priced generation about to be admitted. */
export interface NewGeneration {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  kind: GenerationKind;
  model: string;
  params: PublicParams;
  internal: InternalParams;
  prompt: string;
  quoteMc: Millicredits;
  /** While the account has free chat replies left, one is claimed instead of a hold; names the model that serves it. */
  freeChat?: { model: string } | undefined;
  /**
   * Recorded `running` at once: the API runs it itself (a chat it streams), so no workflow step
   * has to move it there. Its `queued` and `running` webhooks are both owed, in that order.
   */
  startsRunning?: boolean | undefined;
  /** The key has a budget (as read with the key): its hold is then checked against it, key row locked. */
  budgeted?: boolean | undefined;
  /** The platform's own end user it is for: stored with it, and its hold checked against the customer's budget. */
  customerId?: string | undefined;
  /**
   * A hold its caller resolves itself, with no workflow until then (a chat the API runs): the
   * caller settles or releases it within this many ms, and past that the reconciler releases it.
   */
  resolveWithinMs?: number | undefined;
  /** The job's own callback URL (checked before admission): recorded with it, before its first event. */
  callback?: JobCallback | undefined;
}

/** An Idempotency-Key with the hash of the request it came with. */
export interface KeyedRequest {
  accountId: string;
  key: string;
  requestHash: Buffer;
}

export interface AdmittedGeneration {
  id: string;
  /** The model that runs: the free model when a free reply was claimed. */
  model: string;
  free: boolean;
  amountMc: Millicredits;
}

export type Admission =
  /** Every generation held and recorded; `createdAt` is their rows' (the transaction's start). */
  | { outcome: 'admitted'; generations: AdmittedGeneration[]; createdAt: Date }
  /** The Idempotency-Key was claimed by this same request before: its first generation. */
  | { outcome: 'repeat'; firstId: string }
  /** Too little money for the whole request: nothing was held, claimed or recorded. */
  | { outcome: 'refused'; requiredMc: Millicredits; availableMc: Millicredits }
  /** The key's budget for its period has too little left for the whole request: nothing was held. */
  | KeyBudgetRefusal
  /** The customer's budget for its period has too little left for the whole request: nothing was held. */
  | {
      outcome: 'over_customer_budget';
      customerId: string;
      requiredMc: Millicredits;
      availableMc: Millicredits;
      maxMc: Millicredits;
      period: BudgetPeriod;
    };

/**
 * Admits one request's generations in one transaction: claims the Idempotency-Key (naming the
 * first generation), then for each places the hold (or claims a free chat reply), records the
 * generation `queued` (or `running`, see `startsRunning`) and writes its ledger entry and the
 * webhook deliveries it owes. All or nothing: a refusal rolls everything back, so a refused
 * request leaves no claim, no hold and no generation, and never a workflow. Idempotent per generation id: admitting an id that already
 * holds answers that hold.
 */
export function admit(pool: pg.Pool, generations: readonly NewGeneration[], keyed?: KeyedRequest): Promise<Admission> {
  const attributes = { 'gensvc.generation_id': generations[0]?.id, 'gensvc.generations': generations.length };
  return ledgerSpan('admit', attributes, () => admitRequest(pool, generations, keyed));
}

async function admitRequest(
  pool: pg.Pool,
  generations: readonly NewGeneration[],
  keyed?: KeyedRequest,
): Promise<Admission> {
  const first = generations[0];
  if (!first) throw new Error('admit: nothing to admit');
  // One paid generation without a key and with no webhook owed is one statement, atomic by
  // itself: no BEGIN and COMMIT round trips around it. It is the hot path of a streamed chat.
  // A budgeted key locks its budget row first, and a customer its own row, so they always take the transaction.
  const oneStatement =
    !keyed &&
    generations.length === 1 &&
    !first.freeChat &&
    !first.budgeted &&
    !first.customerId &&
    !first.callback &&
    statusesOf(first).every((s) => !owesEvent(first.kind, s));
  let admission: Admission;
  try {
    const inOneTransaction = () => inTransaction(pool, (tx) => admitAll(tx, generations, keyed, true));
    admission = await classified(() =>
      oneStatement ? admitAll(pool, generations, undefined, false) : inOneTransaction(),
    );
    // The single statement refuses a hold that would cross the account's low-balance threshold:
    // the transaction records the alert with it. A refusal that found too little money is final,
    // so a plain 402 costs one statement, not a second attempt.
    if (oneStatement && admission.outcome === 'refused' && admission.availableMc >= admission.requiredMc)
      admission = await classified(inOneTransaction);
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    // The refusal rolled everything back; that a budget is reached is recorded on its own (it moves
    // no money). Failing to, the request is still refused as decided: the next refusal records it.
    const reached = err.budgetReached;
    if (reached) await inTransaction(pool, reached).catch(() => undefined);
    return err.refusal;
  }
  if (admission.outcome === 'admitted') {
    for (const g of admission.generations) {
      metrics.admissions.inc({ kind: first.kind });
      if (!g.free) metrics.creditsHeld.inc(mcToCredits(g.amountMc));
    }
  }
  return admission;
}

/** The statuses a generation enters on admission, in order. */
const statusesOf = (g: NewGeneration): GenerationStatus[] => (g.startsRunning ? ['queued', 'running'] : ['queued']);
const admittedStatus = (g: NewGeneration): GenerationStatus => (g.startsRunning ? 'running' : 'queued');

/** Every webhook delivery admission owes: one per status entered, its own callback's included. */
async function recordAdmissionEvents(tx: Queryable, g: NewGeneration): Promise<void> {
  if (g.callback) {
    await insertJobCallback(tx, {
      id: newId('wh'),
      accountId: g.accountId,
      ...g.callback,
      job: { generationId: g.id },
    });
  }
  for (const status of statusesOf(g)) await recordStatusEvent(tx, g.id, g.kind, status);
}

/** Thrown inside the transaction so that a refusal rolls back what was held before it. */
class Refusal extends Error {
  constructor(
    readonly refusal: Extract<Admission, { outcome: 'refused' | 'over_budget' | 'over_customer_budget' }>,
    /** Records the alert of the budget that refused, once the refusal has rolled back. */
    readonly budgetReached?: (tx: Queryable) => Promise<void>,
  ) {
    super('refused');
  }
}

/**
 * `alerting`: the caller's transaction records a `balance.low` crossing with the hold that makes
 * it; a lone statement (no transaction) refuses such a hold instead, and admit() retries it in one.
 */
async function admitAll(
  tx: Queryable,
  generations: readonly NewGeneration[],
  keyed: KeyedRequest | undefined,
  alerting: boolean,
): Promise<Admission> {
  if (keyed) {
    const claim = await claimIdempotencyKey(tx, { ...keyed, job: { generationId: generations[0]!.id } });
    if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
    if (claim.outcome === 'repeat') return { outcome: 'repeat', firstId: claim.id };
  }
  const admitted: AdmittedGeneration[] = [];
  let heldMc = 0;
  let createdAt: Date | undefined;
  for (const g of generations) {
    const one = await admitOne(tx, g, alerting);
    if ('overBudget' in one) {
      const requiredMc = generations.reduce((sum, q) => sum + q.quoteMc, 0);
      const keyId = g.apiKeyId!;
      throw new Refusal(
        keyBudgetRefusal(keyId, one.overBudget, requiredMc, heldMc),
        keyBudgetRefused(g.accountId, keyId, one.overBudget),
      );
    }
    if ('overCustomerBudget' in one) {
      const requiredMc = generations.reduce((sum, q) => sum + q.quoteMc, 0);
      const budget = one.overCustomerBudget;
      const customerId = g.customerId!;
      throw new Refusal(
        {
          outcome: 'over_customer_budget',
          customerId,
          requiredMc,
          availableMc: Math.max(0, budget.maxMc - budget.spentMc + heldMc),
          maxMc: budget.maxMc,
          period: budget.period,
        },
        customerBudgetRefused(g.accountId, customerId, budget),
      );
    }
    if ('availableMc' in one) {
      // Said of the whole request: what all of it needs against what was available before it.
      const requiredMc = generations.reduce((sum, q) => sum + q.quoteMc, 0);
      const refusal = { outcome: 'refused', requiredMc, availableMc: one.availableMc + heldMc } as const;
      if (generations.length === 1 && !keyed) return refusal;
      throw new Refusal(refusal);
    }
    heldMc += one.amountMc;
    createdAt ??= one.createdAt;
    admitted.push(one);
  }
  return { outcome: 'admitted', generations: admitted, createdAt: createdAt! };
}

/** now() is the transaction's start, so it is also the `created_at` its inserts default to. */
interface HeldMoney extends AccountMoney {
  created_at: Date;
  /** The account's change number this admission took (core/db/notify.ts, takeChange). */
  change_seq: number;
}

type OneAdmission =
  | (AdmittedGeneration & { createdAt: Date })
  | { availableMc: Millicredits }
  | { overBudget: KeyBudget }
  | { overCustomerBudget: CustomerBudget };

async function admitOne(tx: Queryable, g: NewGeneration, alerting: boolean): Promise<OneAdmission> {
  if (g.freeChat) {
    const claimed = await tx.query<HeldMoney>(
      `UPDATE accounts SET chat_used = chat_used + 1, change_seq = change_seq + 1
        WHERE id = $1 AND chat_used < chat_cap
          AND NOT EXISTS (SELECT 1 FROM holds WHERE generation_id = $2)
        RETURNING balance_mc, held_mc, change_seq, now() AS created_at`,
      [g.accountId, g.id],
    );
    const money = claimed.rows[0];
    if (money) {
      const model = g.freeChat.model;
      await insertFreeReply(tx, { ...g, model }, money);
      return { id: g.id, model, free: true, amountMc: 0, createdAt: money.created_at };
    }
  }

  // Counted before the account's money (key-budgets.ts); a retried step whose hold exists fits.
  const keyBudget = await checkKeyBudget(tx, g, async () => {
    const held = await tx.query('SELECT 1 FROM holds WHERE generation_id = $1', [g.id]);
    return (held.rowCount ?? 0) > 0;
  });
  if (!keyBudget.fits) return { overBudget: keyBudget.budget };
  // The customer's row is locked after the key's budget row, always in this order, so two
  // admissions never wait on each other's locks.
  let customerBudget: CustomerBudget | undefined;
  if (g.customerId && g.quoteMc > 0) {
    const checked = await checkCustomerBudget(tx, { ...g, customerId: g.customerId });
    if (!checked.fits) return { overCustomerBudget: checked.budget };
    customerBudget = checked.budget;
  }

  // One statement: the conditional update and the three rows it entails. The foreign keys
  // between them are checked at the end of the statement, when all three exist.
  const held = await tx.query<HeldMoney>(
    `WITH a AS (
       UPDATE accounts SET held_mc = held_mc + $2::bigint, change_seq = change_seq + 1
        WHERE id = $1 AND balance_mc - held_mc >= $2::bigint
          AND NOT EXISTS (SELECT 1 FROM holds WHERE generation_id = $3)
          AND ($10::boolean OR low_balance_mc IS NULL OR low_balance_alerted OR balance_mc - held_mc - $2::bigint >= low_balance_mc)
        RETURNING id, balance_mc, held_mc, change_seq
     ), g AS (
       INSERT INTO generations (id, account_id, api_key_id, kind, model, status, started_at, params, internal, prompt, quote_mc, free_chat, change_seq, customer_id)
       SELECT $3, id, $4, $5, $6, $9, CASE WHEN $9 = 'running' THEN now() END, $7, $11, $8, $2::bigint, false, change_seq, $13 FROM a
     ), h AS (
       INSERT INTO holds (generation_id, account_id, amount_mc, free_chat, deadline_at)
       SELECT $3, id, $2::bigint, false, now() + make_interval(secs => $12::double precision / 1000) FROM a
     ), e AS (
       INSERT INTO ledger_entries (account_id, generation_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
       SELECT id, $3, 'hold', $2::bigint, balance_mc, held_mc, NULL FROM a
     )
     SELECT balance_mc, held_mc, now() AS created_at, ${notifyExpr('id', '$3', admittedStatus(g))} FROM a`,
    [
      g.accountId,
      g.quoteMc,
      g.id,
      g.apiKeyId,
      g.kind,
      g.model,
      JSON.stringify(g.params),
      g.prompt,
      admittedStatus(g),
      alerting,
      JSON.stringify(g.internal),
      g.resolveWithinMs ?? null,
      g.customerId ?? null,
    ],
  );
  const done = held.rows[0];
  if (done) {
    await recordAdmissionEvents(tx, g);
    if (alerting) await recordBalanceLow(tx, g.accountId);
    await afterKeyHold(tx, g, keyBudget.budget);
    if (customerBudget && g.customerId) await afterCustomerHold(tx, { ...g, customerId: g.customerId }, customerBudget);
    return { id: g.id, model: g.model, free: false, amountMc: g.quoteMc, createdAt: done.created_at };
  }

  // Nothing moved: either this generation was admitted before (a retried step), or too little money.
  const existing = await tx.query<{ amount_mc: number; free_chat: boolean; model: string; created_at: Date }>(
    `SELECT h.amount_mc, h.free_chat, g.model, g.created_at FROM holds h JOIN generations g ON g.id = h.generation_id
      WHERE h.generation_id = $1`,
    [g.id],
  );
  const found = existing.rows[0];
  if (found)
    return {
      id: g.id,
      model: found.model,
      free: found.free_chat,
      amountMc: found.amount_mc,
      createdAt: found.created_at,
    };
  const available = await tx.query<{ available_mc: number }>(
    'SELECT balance_mc - held_mc AS available_mc FROM accounts WHERE id = $1',
    [g.accountId],
  );
  return { availableMc: available.rows[0]?.available_mc ?? 0 };
}

/** A free reply is a hold of nothing: its rows and entry exist so that it resolves like any other. */
async function insertFreeReply(tx: Queryable, g: NewGeneration, after: HeldMoney): Promise<void> {
  await tx.query(
    `INSERT INTO generations (id, account_id, api_key_id, kind, model, status, started_at, params, internal, prompt, quote_mc, free_chat, change_seq, customer_id)
     VALUES ($1, $2, $3, $4, $5, $8, CASE WHEN $8 = 'running' THEN now() END, $6, $9, $7, 0, true, $10, $11)
     RETURNING ${notifyExpr('account_id', 'id', admittedStatus(g))}`,
    [
      g.id,
      g.accountId,
      g.apiKeyId,
      g.kind,
      g.model,
      JSON.stringify(g.params),
      g.prompt,
      admittedStatus(g),
      JSON.stringify(g.internal),
      after.change_seq,
      g.customerId ?? null,
    ],
  );
  await tx.query(
    `INSERT INTO holds (generation_id, account_id, amount_mc, free_chat, deadline_at)
     VALUES ($1, $2, 0, true, now() + make_interval(secs => $3::double precision / 1000))`,
    [g.id, g.accountId, g.resolveWithinMs ?? null],
  );
  await appendEntry(tx, {
    accountId: g.accountId,
    generationId: g.id,
    entry: 'hold',
    amountMc: 0,
    after,
    note: 'free chat reply',
  });
  await recordAdmissionEvents(tx, g);
}
