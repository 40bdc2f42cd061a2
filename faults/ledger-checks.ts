// What the database must say after the faults, whatever they hit: every generation finished, no
// hold left, every account's balance what its ledger adds up to, and every hold moved once.
import type pg from 'pg';

export interface Check {
  name: string;
  ok: boolean;
  /** What was counted, or the first few offenders. */
  detail: string;
}

export interface GenerationFact {
  id: string;
  accountId: string;
  kind: string;
  status: string;
  prompt: string;
  chargedMc: number;
  code: string | null;
  params: Record<string, unknown>;
  holdState: string | null;
  holdAmountMc: number | null;
  holdChargedMc: number | null;
  holdEntries: number;
  charges: number;
  chargedSumMc: number;
  /** Releases of the whole hold (not the unused rest of a partial charge). */
  releases: number;
  /** A batch's line: its hold was taken out of the batch's, so it has no hold entry of its own. */
  batchId: string | null;
}

/** A failed generation as the ledger must leave one: its hold released, nothing charged. */
export const releasedUncharged = (g: GenerationFact): boolean =>
  g.holdState === 'released' && g.charges === 0 && g.chargedMc === 0;

/**
 * The failure codes the run's own outages give: the reconciler's release of a hold whose workflow
 * Temporal never started (or a settle that found it so released), a ledger step or a charge that
 * could not reach PostgreSQL, a deadline that passed while a dependency was down.
 */
export const OUTAGE_CODES: ReadonlySet<string> = new Set(['not_started', 'ledger_error', 'settle_failed', 'timeout']);

/** Failed the way an outage of the run explains, and charged nothing for it. */
export const failedByOutage = (g: GenerationFact): boolean =>
  g.status === 'failed' && releasedUncharged(g) && OUTAGE_CODES.has(g.code ?? '');

/** A check over many rows: ok when none offends; names the first few that do. */
export function everyRow<T>(
  name: string,
  rows: T[],
  offends: (row: T) => string | undefined,
  counted = `${rows.length} checked`,
): Check {
  const offences = rows.flatMap((row) => {
    const why = offends(row);
    return why === undefined ? [] : [why];
  });
  return {
    name,
    ok: offences.length === 0,
    detail: offences.length === 0 ? counted : `${offences.length} wrong: ${offences.slice(0, 5).join('; ')}`,
  };
}

export async function generationFacts(db: pg.Pool): Promise<GenerationFact[]> {
  const r = await db.query<GenerationFact>(
    `SELECT g.id, g.account_id AS "accountId", g.kind, g.status, g.prompt, g.charged_mc AS "chargedMc",
            g.error->>'code' AS code, g.params, g.batch_id AS "batchId",
            h.state AS "holdState", h.amount_mc AS "holdAmountMc", h.charged_mc AS "holdChargedMc",
            count(e.id) FILTER (WHERE e.entry = 'hold')::int AS "holdEntries",
            count(e.id) FILTER (WHERE e.entry = 'charge')::int AS charges,
            COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry = 'charge'), 0)::bigint AS "chargedSumMc",
            count(e.id) FILTER (WHERE e.entry = 'release' AND e.note IS DISTINCT FROM 'unused part of the hold')::int AS releases
       FROM generations g
       LEFT JOIN holds h ON h.generation_id = g.id
       LEFT JOIN ledger_entries e ON e.generation_id = g.id
      GROUP BY g.id, h.generation_id
      ORDER BY g.id`,
  );
  return r.rows;
}

export async function ledgerChecks(db: pg.Pool, facts: GenerationFact[]): Promise<Check[]> {
  const checks: Check[] = [];
  const live = facts.filter((g) => g.status === 'queued' || g.status === 'running');
  checks.push({
    name: 'every generation terminal',
    ok: live.length === 0,
    detail:
      live.length === 0
        ? `${facts.length} generations, none queued or running`
        : `${live.length} still live: ${live
            .slice(0, 5)
            .map((g) => `${g.id} ${g.status}`)
            .join(', ')}`,
  });
  const held = facts.filter((g) => g.holdState === 'held');
  checks.push({
    name: 'no active hold',
    ok: held.length === 0,
    detail:
      held.length === 0
        ? 'every hold settled or released'
        : `${held.length} held: ${held
            .slice(0, 5)
            .map((g) => g.id)
            .join(', ')}`,
  });

  const accounts = await db.query<{
    id: string;
    balance_mc: number;
    held_mc: number;
    ledger_balance_mc: number;
    ledger_held_mc: number;
    holds_held_mc: number;
    charged_mc: number;
    charges_mc: number;
    last_balance_mc: number | null;
    last_held_mc: number | null;
  }>(
    `SELECT a.id, a.balance_mc, a.held_mc,
            (COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry = 'credit'), 0) - COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry IN ('charge', 'refund')), 0))::bigint AS ledger_balance_mc,
            (COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry = 'hold'), 0) - COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry IN ('release', 'charge')), 0))::bigint AS ledger_held_mc,
            ((SELECT COALESCE(sum(h.amount_mc), 0) FROM holds h WHERE h.account_id = a.id AND h.state = 'held')
             + (SELECT COALESCE(sum(b.held_mc), 0) FROM batches b WHERE b.account_id = a.id))::bigint AS holds_held_mc,
            (SELECT COALESCE(sum(g.charged_mc), 0) FROM generations g WHERE g.account_id = a.id)::bigint AS charged_mc,
            COALESCE(sum(e.amount_mc) FILTER (WHERE e.entry = 'charge'), 0)::bigint AS charges_mc,
            (SELECT l.balance_after_mc FROM ledger_entries l WHERE l.account_id = a.id ORDER BY l.id DESC LIMIT 1) AS last_balance_mc,
            (SELECT l.held_after_mc FROM ledger_entries l WHERE l.account_id = a.id ORDER BY l.id DESC LIMIT 1) AS last_held_mc
       FROM accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
      GROUP BY a.id ORDER BY a.id`,
  );
  checks.push(
    everyRow(
      'balance = Σ ledger (credits − charges − refunds)',
      accounts.rows,
      (a) =>
        a.balance_mc !== a.ledger_balance_mc || a.last_balance_mc !== a.balance_mc
          ? `${a.id}: balance ${a.balance_mc} mc, ledger ${a.ledger_balance_mc} mc, last entry ${a.last_balance_mc}`
          : undefined,
      `${accounts.rowCount} accounts`,
    ),
  );
  checks.push(
    everyRow(
      'held = Σ holds held (+ batches’ untaken parts) = Σ ledger (holds − releases − charges)',
      accounts.rows,
      (a) =>
        a.held_mc !== a.holds_held_mc || a.held_mc !== a.ledger_held_mc || a.last_held_mc !== a.held_mc
          ? `${a.id}: held ${a.held_mc} mc, holds ${a.holds_held_mc}, ledger ${a.ledger_held_mc}, last entry ${a.last_held_mc}`
          : undefined,
      `${accounts.rowCount} accounts`,
    ),
  );
  checks.push(
    everyRow(
      'charges in the ledger = charges on the generations',
      accounts.rows,
      (a) =>
        a.charges_mc !== a.charged_mc
          ? `${a.id}: ledger ${a.charges_mc} mc, generations ${a.charged_mc} mc`
          : undefined,
      `${accounts.rowCount} accounts`,
    ),
  );
  const constraint = await db.query<{ convalidated: boolean }>(
    `SELECT convalidated FROM pg_constraint WHERE conname = 'accounts_no_overdraft'`,
  );
  const overdrawn = accounts.rows.filter((a) => a.held_mc < 0 || a.balance_mc - a.held_mc < 0);
  checks.push({
    name: 'accounts_no_overdraft holds',
    ok: constraint.rows[0]?.convalidated === true && overdrawn.length === 0,
    detail:
      constraint.rows[0]?.convalidated !== true
        ? 'the constraint is missing or not validated'
        : overdrawn.length === 0
          ? 'validated; no account below zero'
          : `overdrawn: ${overdrawn.map((a) => a.id).join(', ')}`,
  });

  checks.push(
    everyRow('one hold per generation, moved once', facts, (g) => {
      if (g.holdState === null) return `${g.id}: no hold`;
      // A batch's line holds a share of its batch's one hold entry (batchLedgerChecks).
      const holdEntries = g.batchId === null ? 1 : 0;
      if (g.holdEntries !== holdEntries) return `${g.id}: ${g.holdEntries} hold entries`;
      const moves = g.charges + g.releases;
      if (moves !== (g.holdState === 'held' ? 0 : 1))
        return `${g.id}: hold ${g.holdState}, ${g.charges} charges and ${g.releases} releases`;
      return undefined;
    }),
  );
  checks.push(
    everyRow('nothing charged twice; charge = hold outcome = status', facts, (g) => {
      if (g.charges > 1) return `${g.id}: charged ${g.charges} times`;
      if (
        g.status === 'succeeded' &&
        (g.holdState !== 'settled' || g.chargedSumMc !== g.chargedMc || g.holdChargedMc !== g.chargedMc)
      ) {
        return `${g.id}: succeeded, hold ${g.holdState}, charged ${g.chargedMc} mc, ledger ${g.chargedSumMc} mc, hold says ${g.holdChargedMc}`;
      }
      if (g.status === 'failed' && !releasedUncharged(g))
        return `${g.id}: failed, hold ${g.holdState}, ${g.charges} charges, charged ${g.chargedMc} mc`;
      return undefined;
    }),
  );

  const keys = await db.query<{ key: string; job: string; found: boolean }>(
    `SELECT k.key, COALESCE(k.generation_id, k.batch_id) AS job,
            EXISTS (SELECT 1 FROM generations g WHERE g.id = k.generation_id AND g.account_id = k.account_id)
            OR EXISTS (SELECT 1 FROM batches b WHERE b.id = k.batch_id AND b.account_id = k.account_id) AS found
       FROM idempotency_keys k`,
  );
  checks.push(
    everyRow(
      'every Idempotency-Key claim names one generation or batch of its account',
      keys.rows,
      (k) => (k.found ? undefined : `${k.key} → ${k.job} (missing)`),
      `${keys.rowCount} keys`,
    ),
  );
  return checks;
}

export async function idempotencyClaims(db: pg.Pool): Promise<Map<string, string>> {
  const r = await db.query<{ key: string; generation_id: string }>(
    'SELECT key, generation_id FROM idempotency_keys WHERE generation_id IS NOT NULL',
  );
  return new Map(r.rows.map((k) => [k.key, k.generation_id]));
}

/**
 * A batch's money: held once (one `hold` entry of its whole quote), each line's share taken into
 * its generations' holds at most once, the rest released by the batch (entries naming it); when it
 * has ended nothing of it is held, and every line ran once at most, as the generations its request named.
 */
export async function batchLedgerChecks(db: pg.Pool): Promise<Check[]> {
  const batches = await db.query<{
    id: string;
    status: string;
    quote_mc: number;
    held_mc: number;
    hold_entries: number;
    held_entry_mc: number;
    released_mc: number;
    lines_mc: number;
  }>(
    `SELECT b.id, b.status, b.quote_mc, b.held_mc,
            (SELECT count(*) FROM ledger_entries e WHERE e.batch_id = b.id AND e.entry = 'hold')::int AS hold_entries,
            (SELECT COALESCE(sum(e.amount_mc), 0) FROM ledger_entries e WHERE e.batch_id = b.id AND e.entry = 'hold')::bigint AS held_entry_mc,
            (SELECT COALESCE(sum(e.amount_mc), 0) FROM ledger_entries e WHERE e.batch_id = b.id AND e.entry = 'release')::bigint AS released_mc,
            (SELECT COALESCE(sum(h.amount_mc), 0) FROM generations g JOIN holds h ON h.generation_id = g.id WHERE g.batch_id = b.id)::bigint AS lines_mc
       FROM batches b ORDER BY b.id`,
  );
  const checks: Check[] = [];
  checks.push(
    everyRow(
      'every batch ended, nothing of it held',
      batches.rows,
      (b) =>
        !['completed', 'cancelled', 'expired', 'failed'].includes(b.status) || b.held_mc !== 0
          ? `${b.id}: ${b.status}, ${b.held_mc} mc still held`
          : undefined,
      `${batches.rowCount} batches`,
    ),
  );
  checks.push(
    everyRow(
      'each batch held once; its lines took their shares, the rest was released',
      batches.rows,
      (b) => {
        if (b.status === 'failed' && b.quote_mc === 0)
          return b.hold_entries === 0 ? undefined : `${b.id}: held though it failed validation`;
        if (b.hold_entries !== 1 || b.held_entry_mc !== b.quote_mc)
          return `${b.id}: ${b.hold_entries} hold entries of ${b.held_entry_mc} mc for a quote of ${b.quote_mc}`;
        if (b.lines_mc + b.released_mc !== b.quote_mc)
          return `${b.id}: lines ${b.lines_mc} + released ${b.released_mc} ≠ quote ${b.quote_mc}`;
        return undefined;
      },
      `${batches.rowCount} batches`,
    ),
  );
  const lines = await db.query<{ batch_id: string; line: number; named: number; wanted: number; made: number }>(
    `SELECT l.batch_id, l.line, COALESCE(cardinality(l.generation_ids), 0) AS named,
            jsonb_array_length(l.request->'generations') AS wanted,
            (SELECT count(*) FROM generations g WHERE g.batch_id = l.batch_id AND g.batch_line = l.line)::int AS made
       FROM batch_lines l ORDER BY l.batch_id, l.line`,
  );
  checks.push(
    everyRow(
      'every batch line ran at most once, as the generations its request named',
      lines.rows,
      (l) =>
        l.made !== l.named || (l.named !== 0 && l.named !== l.wanted)
          ? `${l.batch_id} line ${l.line}: ${l.made} generations, ${l.named} named, ${l.wanted} asked for`
          : undefined,
      `${lines.rowCount} lines`,
    ),
  );
  return checks;
}
