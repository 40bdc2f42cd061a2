import type { Queryable } from './pool';
import type { Millicredits } from '../money';
import type { Plan } from '../plans';

export interface AccountCredits {
  plan: Plan;
  balanceMc: Millicredits;
  heldMc: Millicredits;
  chatCap: number;
  chatUsed: number;
}

/** A new account with no money; its opening balance is the ledger's to credit (core/ledger/credit.ts, openAccount). */
export async function insertAccount(tx: Queryable, a: { id: string; plan: Plan; chatCap: number }): Promise<void> {
  await tx.query('INSERT INTO accounts (id, plan, chat_cap) VALUES ($1, $2, $3)', [a.id, a.plan, a.chatCap]);
}

export async function getAccountCredits(q: Queryable, accountId: string): Promise<AccountCredits | undefined> {
  const r = await q.query<{ plan: Plan; balance_mc: number; held_mc: number; chat_cap: number; chat_used: number }>(
    'SELECT plan, balance_mc, held_mc, chat_cap, chat_used FROM accounts WHERE id = $1',
    [accountId],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  return {
    plan: row.plan,
    balanceMc: row.balance_mc,
    heldMc: row.held_mc,
    chatCap: row.chat_cap,
    chatUsed: row.chat_used,
  };
}

export interface StoredApiKey {
  id: string;
  accountId: string;
  plan: Plan;
  scopes: string[];
  models: string[] | null;
  /** The account's available balance when the key was read: a hint for speculation, never a decision. */
  availableMc?: number;
  lastUsedAt: Date | null;
  /** The key has a spending budget: its admissions lock and check it. */
  budgeted: boolean;
}

export async function insertApiKey(
  tx: Queryable,
  k: { id: string; accountId: string; keyHash: Buffer; keyHint: string; scopes: string[]; models: string[] | null },
): Promise<void> {
  await tx.query(
    `INSERT INTO api_keys (id, account_id, key_hash, key_hint, scopes, models) VALUES ($1, $2, $3, $4, $5, $6)`,
    [k.id, k.accountId, k.keyHash, k.keyHint, k.scopes, k.models],
  );
}

/** What makes a key (`k`, joined to its account) usable: the one condition of every check of a key. */
const LIVE_KEY = 'k.revoked_at IS NULL';

/**
 * Of these keys, the ids of those still usable, by the same condition as the lookup of every
 * request: what an open stream checks again while it runs (a revoked key, or one whose account is
 * gone, is missing from the answer).
 */
export async function liveApiKeys(q: Queryable, keyIds: readonly string[]): Promise<Set<string>> {
  if (keyIds.length === 0) return new Set();
  const r = await q.query<{ id: string }>(
    `SELECT k.id FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ANY($1::text[]) AND ${LIVE_KEY}`,
    [keyIds],
  );
  return new Set(r.rows.map((row) => row.id));
}

/** The live key with this hash; a revoked key is not found, so revocation applies on the next request. */
export async function findApiKeyByHash(q: Queryable, keyHash: Buffer): Promise<StoredApiKey | undefined> {
  // Named: prepared once per connection, since every keyed request starts with it.
  const r = await q.query<{
    id: string;
    account_id: string;
    plan: Plan;
    scopes: string[];
    models: string[] | null;
    available_mc: number;
    last_used_at: Date | null;
    budgeted: boolean;
  }>({
    name: 'find-api-key',
    text: `SELECT k.id, k.account_id, a.plan, k.scopes, k.models, a.balance_mc - a.held_mc AS available_mc, k.last_used_at,
                  EXISTS (SELECT 1 FROM api_key_budgets b WHERE b.key_id = k.id) AS budgeted
             FROM api_keys k JOIN accounts a ON a.id = k.account_id
            WHERE k.key_hash = $1 AND ${LIVE_KEY}`,
    values: [keyHash],
  });
  const row = r.rows[0];
  return (
    row && {
      id: row.id,
      accountId: row.account_id,
      plan: row.plan,
      scopes: row.scopes,
      models: row.models,
      availableMc: row.available_mc,
      lastUsedAt: row.last_used_at,
      budgeted: row.budgeted,
    }
  );
}

/** How stale `last_used_at` may get: the auth hook writes it at most about once a minute per key. */
export const KEY_USE_RESOLUTION_MS = 60_000;

/** Records a use of the key unless one was recorded within the last minute (a no-op then). */
export async function touchApiKey(q: Queryable, keyId: string): Promise<void> {
  await q.query(
    `UPDATE api_keys SET last_used_at = now()
      WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2::double precision / 1000))`,
    [keyId, KEY_USE_RESOLUTION_MS],
  );
}

/** Revokes a key; with an account, only a key of that account (another account's reads as unknown). */
export async function revokeApiKey(q: Queryable, keyId: string, accountId?: string): Promise<boolean> {
  const r = await q.query(
    'UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR account_id = $2)',
    [keyId, accountId ?? null],
  );
  if ((r.rowCount ?? 0) > 0) return true;
  const exists = await q.query('SELECT 1 FROM api_keys WHERE id = $1 AND ($2::text IS NULL OR account_id = $2)', [
    keyId,
    accountId ?? null,
  ]);
  return (exists.rowCount ?? 0) > 0;
}

/** The account a key belongs to (revoked or not), when it exists and (given an account) is that account's. */
export async function keyAccountOf(q: Queryable, keyId: string, accountId?: string): Promise<string | undefined> {
  const r = await q.query<{ account_id: string }>(
    'SELECT account_id FROM api_keys WHERE id = $1 AND ($2::text IS NULL OR account_id = $2)',
    [keyId, accountId ?? null],
  );
  return r.rows[0]?.account_id;
}

export interface ApiKeySummary {
  id: string;
  /** The key's first and last characters (gsk_AbCd…wxyz): enough to recognise it, useless to use it. */
  hint: string;
  scopes: string[];
  models: string[] | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** An account's live keys, newest first. */
export async function listApiKeys(q: Queryable, accountId: string): Promise<ApiKeySummary[]> {
  const r = await q.query<{
    id: string;
    key_hint: string;
    scopes: string[];
    models: string[] | null;
    created_at: Date;
    last_used_at: Date | null;
  }>(
    `SELECT id, key_hint, scopes, models, created_at, last_used_at FROM api_keys
      WHERE account_id = $1 AND revoked_at IS NULL ORDER BY id DESC`,
    [accountId],
  );
  return r.rows.map((row) => ({
    id: row.id,
    hint: row.key_hint,
    scopes: row.scopes,
    models: row.models,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }));
}

export async function accountExists(q: Queryable, accountId: string): Promise<boolean> {
  const r = await q.query('SELECT 1 FROM accounts WHERE id = $1', [accountId]);
  return (r.rowCount ?? 0) > 0;
}
