import type { Queryable } from './pool';
import type { Millicredits } from '../money';
import { fromRow, GENERATION_COLUMNS } from './generations';
import type { GenerationDbRow, GenerationRow } from './generations';

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
  | { admitted: true; free: boolean; model: string; amountMc: Millicredits }
  | { admitted: false; requiredMc: Millicredits; availableMc: Millicredits };

interface AccountMoney {
  balance_mc: number;
  held_mc: number;
}

export async function placeHold(tx: Queryable, req: HoldRequest): Promise<HoldOutcome> {
  const { generation: g } = req;
  // A retried activity finds the hold it already placed.
  const existing = await tx.query<{ amount_mc: number; free_chat: boolean; model: string }>(
    `SELECT h.amount_mc, h.free_chat, g.model FROM holds h JOIN generations g ON g.id = h.generation_id
      WHERE h.generation_id = $1`,
    [g.id],
  );
  const found = existing.rows[0];
  if (found) return { admitted: true, free: found.free_chat, model: found.model, amountMc: found.amount_mc };

  if (req.freeChat) {
    const claimed = await tx.query<AccountMoney>(
      `UPDATE accounts SET chat_used = chat_used + 1
        WHERE id = $1 AND chat_used < chat_cap RETURNING balance_mc, held_mc`,
      [g.accountId],
    );
    const money = claimed.rows[0];
    if (money) {
      const model = req.freeChat.model;
      await insertGenerationAndHold(tx, { ...g, model }, 0, true, money, 'free chat reply');
      return { admitted: true, free: true, model, amountMc: 0 };
    }
  }

  const held = await tx.query<AccountMoney>(
    `UPDATE accounts SET held_mc = held_mc + $2::bigint
      WHERE id = $1 AND balance_mc - held_mc >= $2::bigint RETURNING balance_mc, held_mc`,
    [g.accountId, req.amountMc],
  );
  const money = held.rows[0];
  if (!money) {
    const available = await tx.query<{ available_mc: number }>(
      'SELECT balance_mc - held_mc AS available_mc FROM accounts WHERE id = $1',
      [g.accountId],
    );
    return { admitted: false, requiredMc: req.amountMc, availableMc: available.rows[0]?.available_mc ?? 0 };
  }
  await insertGenerationAndHold(tx, g, req.amountMc, false, money, null);
  return { admitted: true, free: false, model: g.model, amountMc: req.amountMc };
}

export type Admission =
  | { admitted: true; generation: GenerationRow }
  | { admitted: false; requiredMc: Millicredits; availableMc: Millicredits };

/**
 * The API's admission of a new paid generation in ONE statement, hence one round trip and its own
 * transaction: the conditional hold on the account, the generation row, the hold row and the
 * ledger entry, all or nothing. Every part of a data-modifying WITH sees the same snapshot, so the
 * account read at the bottom is the balance before this hold: on a refusal it is what was
 * available. No row at all means no such account (refused, nothing available). Requests that
 * claim an Idempotency-Key or a free chat reply take `placeHold` in a transaction instead.
 */
const ADMIT = `
  WITH a AS (
    UPDATE accounts SET held_mc = held_mc + $8::bigint
     WHERE id = $2 AND balance_mc - held_mc >= $8::bigint
     RETURNING id, balance_mc, held_mc
  ), g AS (
    INSERT INTO generations (id, account_id, api_key_id, kind, model, status, params, prompt, quote_mc, free_chat)
    SELECT $1, a.id, $3, $4, $5, 'queued', $6, $7, $8::bigint, false FROM a
    RETURNING ${GENERATION_COLUMNS}
  ), h AS (
    INSERT INTO holds (generation_id, account_id, amount_mc, free_chat) SELECT $1, a.id, $8::bigint, false FROM a
  ), e AS (
    INSERT INTO ledger_entries (account_id, generation_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
    SELECT a.id, $1, 'hold', $8::bigint, a.balance_mc, a.held_mc, NULL FROM a
  )
  SELECT g.*, before.available_mc
    FROM (SELECT balance_mc - held_mc AS available_mc FROM accounts WHERE id = $2) before
    LEFT JOIN g ON true`;

export async function admitGeneration(q: Queryable, req: { generation: NewGeneration; amountMc: Millicredits }): Promise<Admission> {
  const { generation: g } = req;
  const r = await q.query<GenerationDbRow & { available_mc: number }>({
    name: 'admit-generation',
    text: ADMIT,
    values: [g.id, g.accountId, g.apiKeyId, g.kind, g.model, JSON.stringify(g.params), g.prompt, req.amountMc],
  });
  const row = r.rows[0];
  if (row?.id) return { admitted: true, generation: fromRow(row) };
  return { admitted: false, requiredMc: req.amountMc, availableMc: row?.available_mc ?? 0 };
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
}

export interface SettleRequest {
  generationId: string;
  /** What the run actually cost; omitted means the quote. Never more than the hold. */
  chargeMc?: Millicredits;
  outputKey: string | null;
  outputText: string | null;
}

export type Resolution =
  | { outcome: 'settled'; kind: string; chargedMc: Millicredits; releasedMc: Millicredits }
  | { outcome: 'released'; kind: string; releasedMc: Millicredits; code: string }
  | { outcome: 'already'; state: 'settled' | 'released' };

/**
 * The settle, in ONE statement (one round trip, its own transaction when not given one): the hold
 * moves `held → settled` with its charge (never more than the hold), the account gives the hold back
 * and pays the charge, the ledger records the charge and, if the run cost less than the hold, the
 * release of the rest (in that order), and the generation becomes `succeeded` with its output. If
 * the hold had already moved (a retried activity, or a release that won), nothing changes and the
 * answer says which way it went; `prior` is the hold's state in the statement's snapshot.
 */
const SETTLE = `
  WITH h AS (
    UPDATE holds SET state = 'settled', resolved_at = now(), charged_mc = LEAST(COALESCE($2::bigint, amount_mc), amount_mc)
     WHERE generation_id = $1 AND state = 'held'
     RETURNING account_id, amount_mc, charged_mc
  ), a AS (
    UPDATE accounts SET held_mc = accounts.held_mc - h.amount_mc, balance_mc = accounts.balance_mc - h.charged_mc
      FROM h WHERE accounts.id = h.account_id
    RETURNING accounts.id, accounts.balance_mc, accounts.held_mc
  ), e AS (
    INSERT INTO ledger_entries (account_id, generation_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
    SELECT a.id, $1, v.entry, v.amount, a.balance_mc, a.held_mc, v.note
      FROM a, h, LATERAL (VALUES (1, 'charge', h.charged_mc, NULL::text),
                                 (2, 'release', h.amount_mc - h.charged_mc, 'unused part of the hold')) AS v (n, entry, amount, note)
     WHERE v.n = 1 OR v.amount > 0
     ORDER BY v.n
  ), g AS (
    UPDATE generations SET status = 'succeeded', charged_mc = h.charged_mc, output_key = $3, output_text = $4,
           started_at = COALESCE(started_at, now()), finished_at = now(), updated_at = now()
      FROM h WHERE generations.id = $1
    RETURNING generations.kind
  )
  SELECT prior.state AS prior, h.amount_mc, h.charged_mc, g.kind
    FROM (SELECT state FROM holds WHERE generation_id = $1) AS prior
    LEFT JOIN h ON true LEFT JOIN g ON true`;

export async function settleHold(q: Queryable, req: SettleRequest): Promise<Resolution> {
  const r = await q.query<{ prior: 'held' | 'settled' | 'released'; amount_mc: number | null; charged_mc: number | null; kind: string | null }>({
    name: 'settle-hold',
    text: SETTLE,
    values: [req.generationId, req.chargeMc ?? null, req.outputKey, req.outputText],
  });
  const row = r.rows[0];
  if (!row) throw new Error(`no hold for generation ${req.generationId}`);
  if (row.amount_mc === null || row.charged_mc === null) {
    // Seen `held` yet not moved: a release committed while this statement waited for the row.
    return row.prior === 'held' ? alreadyResolved(q, req.generationId) : { outcome: 'already', state: row.prior };
  }
  return { outcome: 'settled', kind: row.kind ?? 'unknown', chargedMc: row.charged_mc, releasedMc: row.amount_mc - row.charged_mc };
}

export interface GenerationError {
  code: string;
  message: string;
  retryable: boolean;
}

export async function releaseHold(tx: Queryable, generationId: string, error: GenerationError): Promise<Resolution> {
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
     SELECT balance_mc, held_mc FROM a`,
    [accountId, amountMc, note],
  );
  return r.rows[0];
}
