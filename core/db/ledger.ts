import type { Queryable } from './pool';
import type { Millicredits } from '../money';
import { recordGenerationEvent } from './webhooks';
import { anyEventFor } from '../webhooks/events';
import type { GenerationFailure, GenerationKind } from '../vocabulary';

/**
 * Holds and their settlement. Each function runs inside the caller's transaction; together with
 * the `accounts_no_overdraft` CHECK they make every hold end settled or released exactly once.
 */

export interface NewGeneration {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  kind: string;
  model: string;
  params: Record<string, unknown>;
  prompt: string;
}

export interface HoldRequest {
  generation: NewGeneration;
  amountMc: Millicredits;
  /** When set and the account still has free chat replies, one is claimed instead of a hold. */
  freeChat?: { model: string };
}

export type HoldOutcome =
  /** `createdAt` is the generation row's, for an answer given before anything else reads it. */
  | { admitted: true; free: boolean; model: string; amountMc: Millicredits; createdAt: Date }
  | { admitted: false; requiredMc: Millicredits; availableMc: Millicredits };

interface AccountMoney {
  balance_mc: number;
  held_mc: number;
}

/** now() is the transaction's start, so it is also the `created_at` its inserts default to. */
interface HeldMoney extends AccountMoney {
  created_at: Date;
}

export async function placeHold(tx: Queryable, req: HoldRequest): Promise<HoldOutcome> {
  const { generation: g } = req;

  if (req.freeChat) {
    const claimed = await tx.query<HeldMoney>(
      `UPDATE accounts SET chat_used = chat_used + 1
        WHERE id = $1 AND chat_used < chat_cap
          AND NOT EXISTS (SELECT 1 FROM holds WHERE generation_id = $2) RETURNING balance_mc, held_mc, now() AS created_at`,
      [g.accountId, g.id],
    );
    const money = claimed.rows[0];
    if (money) {
      const model = req.freeChat.model;
      await insertGenerationAndHold(tx, { ...g, model }, 0, true, money, 'free chat reply');
      return { admitted: true, free: true, model, amountMc: 0, createdAt: money.created_at };
    }
  }

  // One statement, one round trip: the conditional update and the three rows it entails. The
  // foreign keys between them are checked at the end of the statement, when all three exist.
  const held = await tx.query<HeldMoney>(
    `WITH a AS (
       UPDATE accounts SET held_mc = held_mc + $2::bigint
        WHERE id = $1 AND balance_mc - held_mc >= $2::bigint
          AND NOT EXISTS (SELECT 1 FROM holds WHERE generation_id = $3)
        RETURNING id, balance_mc, held_mc
     ), g AS (
       INSERT INTO generations (id, account_id, api_key_id, kind, model, status, params, prompt, quote_mc, free_chat)
       SELECT $3, id, $4, $5, $6, 'queued', $7, $8, $2::bigint, false FROM a
     ), h AS (
       INSERT INTO holds (generation_id, account_id, amount_mc, free_chat) SELECT $3, id, $2::bigint, false FROM a
     ), e AS (
       INSERT INTO ledger_entries (account_id, generation_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
       SELECT id, $3, 'hold', $2::bigint, balance_mc, held_mc, NULL FROM a
     )
     SELECT balance_mc, held_mc, now() AS created_at FROM a`,
    [g.accountId, req.amountMc, g.id, g.apiKeyId, g.kind, g.model, JSON.stringify(g.params), g.prompt],
  );
  const done = held.rows[0];
  if (done) {
    // Webhook endpoints may want this `queued` state (flat ones, for videos and upscales): their
    // deliveries are written in the caller's transaction, as for every other state change.
    if (anyEventFor(g.kind as GenerationKind, 'queued')) await recordGenerationEvent(tx, g.id, 'queued');
    return { admitted: true, free: false, model: g.model, amountMc: req.amountMc, createdAt: done.created_at };
  }

  // Nothing moved: either a retried activity that already placed this hold, or too little money.
  const existing = await tx.query<{ amount_mc: number; free_chat: boolean; model: string; created_at: Date }>(
    `SELECT h.amount_mc, h.free_chat, g.model, g.created_at FROM holds h JOIN generations g ON g.id = h.generation_id
      WHERE h.generation_id = $1`,
    [g.id],
  );
  const found = existing.rows[0];
  if (found) return { admitted: true, free: found.free_chat, model: found.model, amountMc: found.amount_mc, createdAt: found.created_at };
  const available = await tx.query<{ available_mc: number }>(
    'SELECT balance_mc - held_mc AS available_mc FROM accounts WHERE id = $1',
    [g.accountId],
  );
  return { admitted: false, requiredMc: req.amountMc, availableMc: available.rows[0]?.available_mc ?? 0 };
}

async function insertGenerationAndHold(
  tx: Queryable,
  g: NewGeneration,
  amountMc: Millicredits,
  free: boolean,
  after: AccountMoney,
  note: string | null,
): Promise<void> {
  await tx.query(
    `INSERT INTO generations (id, account_id, api_key_id, kind, model, status, params, prompt, quote_mc, free_chat)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8::bigint, $9)`,
    [g.id, g.accountId, g.apiKeyId, g.kind, g.model, JSON.stringify(g.params), g.prompt, amountMc, free],
  );
  await tx.query(
    `INSERT INTO holds (generation_id, account_id, amount_mc, free_chat) VALUES ($1, $2, $3::bigint, $4)`,
    [g.id, g.accountId, amountMc, free],
  );
  await appendEntry(tx, g.accountId, g.id, 'hold', amountMc, after, note);
  await recordGenerationEvent(tx, g.id, 'queued');
}

export interface SettleRequest {
  generationId: string;
  /** What the run actually cost; omitted means the quote. Never more than the hold. */
  chargeMc?: Millicredits;
  outputKey: string | null;
  outputText: string | null;
  /** Per-token runs: the output tokens charged for, kept with the generation's parameters. */
  outputTokens?: number;
}

export type Resolution =
  | { outcome: 'settled'; kind: string; chargedMc: Millicredits; releasedMc: Millicredits }
  | { outcome: 'released'; kind: string; releasedMc: Millicredits; code: string }
  | { outcome: 'already'; state: 'settled' | 'released' };

export async function settleHold(tx: Queryable, req: SettleRequest): Promise<Resolution> {
  const moved = await tx.query<{ account_id: string; amount_mc: number; charged_mc: number }>(
    `UPDATE holds SET state = 'settled', resolved_at = now(),
            charged_mc = LEAST(COALESCE($2::bigint, amount_mc), amount_mc)
      WHERE generation_id = $1 AND state = 'held'
      RETURNING account_id, amount_mc, charged_mc`,
    [req.generationId, req.chargeMc ?? null],
  );
  const hold = moved.rows[0];
  if (!hold) return alreadyResolved(tx, req.generationId);

  const rest = hold.amount_mc - hold.charged_mc;
  const after = await moveAccount(tx, hold.account_id, { heldDelta: -hold.amount_mc, balanceDelta: -hold.charged_mc });
  await appendEntry(tx, hold.account_id, req.generationId, 'charge', hold.charged_mc, after, null);
  if (rest > 0) await appendEntry(tx, hold.account_id, req.generationId, 'release', rest, after, 'unused part of the hold');
  const g = await tx.query<{ kind: string }>(
    `UPDATE generations SET status = 'succeeded', charged_mc = $2::bigint, output_key = $3, output_text = $4,
            params = CASE WHEN $5::integer IS NULL THEN params ELSE params || jsonb_build_object('outputTokens', $5::integer) END,
            started_at = COALESCE(started_at, now()), finished_at = now(), updated_at = now()
      WHERE id = $1 RETURNING kind`,
    [req.generationId, hold.charged_mc, req.outputKey, req.outputText, req.outputTokens ?? null],
  );
  await recordGenerationEvent(tx, req.generationId, 'succeeded');
  return { outcome: 'settled', kind: g.rows[0]?.kind ?? 'unknown', chargedMc: hold.charged_mc, releasedMc: rest };
}


export async function releaseHold(tx: Queryable, generationId: string, error: GenerationFailure): Promise<Resolution> {
  const moved = await tx.query<{ account_id: string; amount_mc: number; free_chat: boolean }>(
    `UPDATE holds SET state = 'released', resolved_at = now()
      WHERE generation_id = $1 AND state = 'held'
      RETURNING account_id, amount_mc, free_chat`,
    [generationId],
  );
  const hold = moved.rows[0];
  if (!hold) return alreadyResolved(tx, generationId);

  // A failed free reply gives its allowance back: a failure costs nothing, not even a trial reply.
  const after = await moveAccount(tx, hold.account_id, { heldDelta: -hold.amount_mc, balanceDelta: 0, chatUsedDelta: hold.free_chat ? -1 : 0 });
  await appendEntry(tx, hold.account_id, generationId, 'release', hold.amount_mc, after, error.code);
  const g = await tx.query<{ kind: string }>(
    `UPDATE generations SET status = 'failed', error = $2, finished_at = now(), updated_at = now() WHERE id = $1 RETURNING kind`,
    [generationId, JSON.stringify(error)],
  );
  await recordGenerationEvent(tx, generationId, 'failed');
  return { outcome: 'released', kind: g.rows[0]?.kind ?? 'unknown', releasedMc: hold.amount_mc, code: error.code };
}

async function alreadyResolved(tx: Queryable, generationId: string): Promise<Resolution> {
  const r = await tx.query<{ state: 'held' | 'settled' | 'released' }>('SELECT state FROM holds WHERE generation_id = $1', [generationId]);
  const state = r.rows[0]?.state;
  if (state === 'settled' || state === 'released') return { outcome: 'already', state };
  throw new Error(`no hold for generation ${generationId}`);
}

async function moveAccount(
  tx: Queryable,
  accountId: string,
  d: { heldDelta: number; balanceDelta: number; chatUsedDelta?: number },
): Promise<AccountMoney> {
  const r = await tx.query<AccountMoney>(
    `UPDATE accounts SET held_mc = held_mc + $2::bigint, balance_mc = balance_mc + $3::bigint,
            chat_used = chat_used + $4::integer
      WHERE id = $1 RETURNING balance_mc, held_mc`,
    [accountId, d.heldDelta, d.balanceDelta, d.chatUsedDelta ?? 0],
  );
  const row = r.rows[0];
  if (!row) throw new Error(`account ${accountId} not found`);
  return row;
}

async function appendEntry(
  tx: Queryable,
  accountId: string,
  generationId: string | null,
  entry: 'credit' | 'hold' | 'charge' | 'release',
  amountMc: Millicredits,
  after: AccountMoney,
  note: string | null,
): Promise<void> {
  await tx.query(
    `INSERT INTO ledger_entries (account_id, generation_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
     VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6::bigint, $7)`,
    [accountId, generationId, entry, amountMc, after.balance_mc, after.held_mc, note],
  );
}

/** Adds credits (opening balance or top-up) in one statement: balance and ledger move together. */
export async function creditAccount(tx: Queryable, accountId: string, amountMc: Millicredits, note: string): Promise<AccountMoney | undefined> {
  const r = await tx.query<AccountMoney>(
    `WITH a AS (
       UPDATE accounts SET balance_mc = balance_mc + $2::bigint WHERE id = $1 RETURNING id, balance_mc, held_mc
     ), e AS (
       INSERT INTO ledger_entries (account_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
       SELECT id, 'credit', $2::bigint, balance_mc, held_mc, $3 FROM a
     )
     SELECT balance_mc, held_mc, now() AS created_at FROM a`,
    [accountId, amountMc, note],
  );
  return r.rows[0];
}
