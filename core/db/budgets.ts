import type { Queryable } from './pool';
import type { Millicredits } from '../money';

/** How often a key's budget starts again (UTC boundaries; `none`: never). */
export const BUDGET_PERIODS = ['day', 'week', 'month', 'none'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export interface KeyBudget {
  maxMc: Millicredits;
  period: BudgetPeriod;
  /** Held and charged since the period started. */
  spentMc: Millicredits;
  /** When the current period started (null for `none`). */
  periodStart: Date | null;
}

/**
 * What a key has spent since `since`: its holds still held, what its settled holds charged, and
 * what its batches still hold for lines not started yet. Read, never kept: a release gives budget
 * back and a charge counts without a step of its own.
 */
const SPENT_SQL = `SELECT (
                     (SELECT COALESCE(SUM(CASE h.state WHEN 'held' THEN h.amount_mc WHEN 'settled' THEN h.charged_mc ELSE 0 END), 0)
                        FROM generations g JOIN holds h ON h.generation_id = g.id
                       WHERE g.api_key_id = $1 AND ($2::timestamptz IS NULL OR g.created_at >= $2))
                   + (SELECT COALESCE(SUM(b.held_mc), 0) FROM batches b
                       WHERE b.api_key_id = $1 AND b.held_mc > 0 AND ($2::timestamptz IS NULL OR b.created_at >= $2))
                   )::bigint AS spent_mc`;

/** `since` is null for 'none': node-pg reads PostgreSQL's -infinity as a number, not a Date. */
interface BudgetRow {
  max_mc: number;
  period: BudgetPeriod;
  since: Date | null;
}

/**
 * The key's budget with what it has spent in the current period; `lock` takes the budget row FOR
 * UPDATE first, so that admissions of one key take turns and each sees what the one before held.
 * The sum is a statement of its own after the lock: under READ COMMITTED it then sees every hold
 * committed while this transaction waited.
 */
export async function readKeyBudget(
  q: Queryable,
  keyId: string,
  opts: { lock: boolean },
): Promise<KeyBudget | undefined> {
  const r = await q.query<BudgetRow>(
    `SELECT max_mc, period, NULLIF(budget_period_start(period, now()), '-infinity') AS since FROM api_key_budgets WHERE key_id = $1${opts.lock ? ' FOR UPDATE' : ''}`,
    [keyId],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  const spent = await q.query<{ spent_mc: number }>(SPENT_SQL, [keyId, row.since]);
  return { maxMc: row.max_mc, period: row.period, spentMc: spent.rows[0]?.spent_mc ?? 0, periodStart: row.since };
}

/** Sets (or with null removes) a key's budget; false when the key is not a live key of the account. */
export async function setKeyBudget(
  q: Queryable,
  keyId: string,
  accountId: string | undefined,
  budget: { maxMc: Millicredits; period: BudgetPeriod } | null,
): Promise<boolean> {
  const key = await q.query(
    'SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL AND ($2::text IS NULL OR account_id = $2)',
    [keyId, accountId ?? null],
  );
  if ((key.rowCount ?? 0) === 0) return false;
  if (budget === null) {
    await q.query('DELETE FROM api_key_budgets WHERE key_id = $1', [keyId]);
  } else {
    await q.query(
      `INSERT INTO api_key_budgets (key_id, max_mc, period) VALUES ($1, $2, $3)
       ON CONFLICT (key_id) DO UPDATE SET max_mc = EXCLUDED.max_mc, period = EXCLUDED.period, updated_at = now()`,
      [keyId, budget.maxMc, budget.period],
    );
  }
  return true;
}
