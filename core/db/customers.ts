import type { Millicredits } from '../money';
import type { BudgetPeriod } from './budgets';
import type { Queryable } from './pool';

/**
 * An account's customers (the platform's own end users, migration 201): the limits the account
 * puts on each, by default or for one of them, and what each spent. Spending is summed from the
 * customer's generations' holds, never kept: a release gives budget back, a charge counts as
 * charged, and no other money step touches these rows.
 */

/** A budget as set: at most `maxMc` per period. */
export interface BudgetSetting {
  maxMc: Millicredits;
  period: BudgetPeriod;
}

/**
 * A customer's own limits: absent (undefined) follows the account's default; null is none for
 * this customer even when the account has a default; a value is this customer's own.
 */
export interface CustomerOverrides {
  budget?: BudgetSetting | null | undefined;
  rateLimit?: number | null | undefined;
}

/** The account's defaults for every customer: null is none. */
export interface CustomerDefaults {
  budget: BudgetSetting | null;
  rateLimit: number | null;
}

/** The budget that applies to a customer now, with what it spent in the current period. */
export interface CustomerBudget extends BudgetSetting {
  /** Held and charged since the period started. */
  spentMc: Millicredits;
  /** When the current period started (null for `none`). */
  periodStart: Date | null;
  /** Whose budget it is: the account's default or the customer's own. */
  source: 'default' | 'customer';
}

/** Held now, or charged once settled, by a customer's generations since `since` (all of them for null). */
const SPENT_SQL = `SELECT COALESCE(SUM(CASE h.state WHEN 'held' THEN h.amount_mc WHEN 'settled' THEN h.charged_mc ELSE 0 END), 0)::bigint AS spent_mc
                     FROM generations g JOIN holds h ON h.generation_id = g.id
                    WHERE g.account_id = $1 AND g.customer_id = $2 AND ($3::timestamptz IS NULL OR g.created_at >= $3)`;

/** The effective budget of a customer row joined with its account (`c` and `a`), and its period's start. */
const EFFECTIVE_BUDGET = `CASE WHEN c.budget_override THEN c.max_mc ELSE a.customer_budget_mc END AS max_mc,
       CASE WHEN c.budget_override THEN c.period ELSE a.customer_budget_period END AS period,
       CASE WHEN c.budget_override THEN 'customer' ELSE 'default' END AS source`;

interface BudgetRow {
  max_mc: number | null;
  period: BudgetPeriod | null;
  source: 'default' | 'customer';
}

/** Makes sure the customer has its row (the one its admissions lock); nothing happens when it has. */
export async function ensureCustomer(q: Queryable, accountId: string, customerId: string): Promise<void> {
  await q.query('INSERT INTO customers (account_id, customer_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    accountId,
    customerId,
  ]);
}

/**
 * The budget that applies to a customer with what it has spent this period, or undefined when
 * none does. `lock` takes the customer's row FOR UPDATE first (it must exist: ensureCustomer), so
 * that admissions of one customer take turns; the sum is a statement of its own after the lock, so
 * that under READ COMMITTED it sees every hold committed while this transaction waited.
 */
export async function readCustomerBudget(
  q: Queryable,
  accountId: string,
  customerId: string,
  opts: { lock: boolean },
): Promise<CustomerBudget | undefined> {
  const r = await q.query<BudgetRow & { since: Date | null }>(
    `SELECT ${EFFECTIVE_BUDGET},
            NULLIF(budget_period_start(CASE WHEN c.budget_override THEN c.period ELSE a.customer_budget_period END, now()), '-infinity') AS since
       ${
         // Locking needs the customer's row (an outer join's nullable side cannot be locked).
         opts.lock
           ? 'FROM customers c JOIN accounts a ON a.id = c.account_id WHERE c.account_id = $1 AND c.customer_id = $2 FOR UPDATE OF c'
           : 'FROM accounts a LEFT JOIN customers c ON c.account_id = a.id AND c.customer_id = $2 WHERE a.id = $1'
       }`,
    [accountId, customerId],
  );
  const row = r.rows[0];
  if (!row || row.max_mc === null || row.period === null) return undefined;
  const spent = await q.query<{ spent_mc: number }>(SPENT_SQL, [accountId, customerId, row.since]);
  return {
    maxMc: row.max_mc,
    period: row.period,
    spentMc: spent.rows[0]?.spent_mc ?? 0,
    periodStart: row.since,
    source: row.source,
  };
}

/** Requests per minute a customer may make, or null when no limit applies. */
export async function customerRateLimit(q: Queryable, accountId: string, customerId: string): Promise<number | null> {
  const r = await q.query<{ rate_limit: number | null }>(
    `SELECT CASE WHEN c.rate_override THEN c.rate_limit ELSE a.customer_rate_limit END AS rate_limit
       FROM accounts a LEFT JOIN customers c ON c.account_id = a.id AND c.customer_id = $2
      WHERE a.id = $1`,
    [accountId, customerId],
  );
  return r.rows[0]?.rate_limit ?? null;
}

export async function readCustomerDefaults(q: Queryable, accountId: string): Promise<CustomerDefaults | undefined> {
  const r = await q.query<{ max_mc: number | null; period: BudgetPeriod | null; rate_limit: number | null }>(
    `SELECT customer_budget_mc AS max_mc, customer_budget_period AS period, customer_rate_limit AS rate_limit
       FROM accounts WHERE id = $1`,
    [accountId],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  return {
    budget: row.max_mc === null || row.period === null ? null : { maxMc: row.max_mc, period: row.period },
    rateLimit: row.rate_limit,
  };
}

/** Sets the account's defaults; false when the account does not exist. */
export async function setCustomerDefaults(q: Queryable, accountId: string, d: CustomerDefaults): Promise<boolean> {
  const r = await q.query(
    `UPDATE accounts SET customer_budget_mc = $2::bigint, customer_budget_period = $3, customer_rate_limit = $4 WHERE id = $1`,
    [accountId, d.budget?.maxMc ?? null, d.budget?.period ?? null, d.rateLimit],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Sets a customer's own limits (what `o` leaves out follows the account's defaults again). */
export async function setCustomerOverrides(
  q: Queryable,
  accountId: string,
  customerId: string,
  o: CustomerOverrides,
): Promise<void> {
  await q.query(
    `INSERT INTO customers (account_id, customer_id, budget_override, max_mc, period, rate_override, rate_limit)
     VALUES ($1, $2, $3, $4::bigint, $5, $6, $7)
     ON CONFLICT (account_id, customer_id) DO UPDATE SET budget_override = EXCLUDED.budget_override, max_mc = EXCLUDED.max_mc,
       period = EXCLUDED.period, rate_override = EXCLUDED.rate_override, rate_limit = EXCLUDED.rate_limit, updated_at = now()`,
    [
      accountId,
      customerId,
      o.budget !== undefined,
      o.budget?.maxMc ?? null,
      o.budget?.period ?? null,
      o.rateLimit !== undefined,
      o.rateLimit ?? null,
    ],
  );
}

/** A customer as the account sees it: its own limits, what applies, and what it spent this period. */
export interface CustomerRow {
  customerId: string;
  overrides: CustomerOverrides;
  budget: CustomerBudget | null;
  rateLimit: number | null;
  createdAt: Date;
}

interface CustomerDbRow extends BudgetRow {
  customer_id: string;
  budget_override: boolean;
  own_max_mc: number | null;
  own_period: BudgetPeriod | null;
  rate_override: boolean;
  own_rate_limit: number | null;
  rate_limit: number | null;
  since: Date | null;
  spent_mc: number;
  created_at: Date;
}

const CUSTOMER_SELECT = `SELECT c.customer_id, c.budget_override, c.max_mc AS own_max_mc, c.period AS own_period, c.rate_override,
         c.rate_limit AS own_rate_limit, c.created_at, ${EFFECTIVE_BUDGET},
         CASE WHEN c.rate_override THEN c.rate_limit ELSE a.customer_rate_limit END AS rate_limit,
         p.since, COALESCE(s.spent_mc, 0)::bigint AS spent_mc
    FROM customers c JOIN accounts a ON a.id = c.account_id
    CROSS JOIN LATERAL (SELECT NULLIF(budget_period_start(CASE WHEN c.budget_override THEN c.period ELSE a.customer_budget_period END, now()), '-infinity') AS since) p
    LEFT JOIN LATERAL (
      SELECT SUM(CASE h.state WHEN 'held' THEN h.amount_mc WHEN 'settled' THEN h.charged_mc ELSE 0 END) AS spent_mc
        FROM generations g JOIN holds h ON h.generation_id = g.id
       WHERE g.account_id = c.account_id AND g.customer_id = c.customer_id AND (p.since IS NULL OR g.created_at >= p.since)
    ) s ON true`;

function customerOf(r: CustomerDbRow): CustomerRow {
  const overrides: CustomerOverrides = {};
  if (r.budget_override)
    overrides.budget =
      r.own_max_mc === null || r.own_period === null ? null : { maxMc: r.own_max_mc, period: r.own_period };
  if (r.rate_override) overrides.rateLimit = r.own_rate_limit;
  return {
    customerId: r.customer_id,
    overrides,
    budget:
      r.max_mc === null || r.period === null
        ? null
        : { maxMc: r.max_mc, period: r.period, spentMc: r.spent_mc, periodStart: r.since, source: r.source },
    rateLimit: r.rate_limit,
    createdAt: r.created_at,
  };
}

export async function getCustomer(
  q: Queryable,
  accountId: string,
  customerId: string,
): Promise<CustomerRow | undefined> {
  const r = await q.query<CustomerDbRow>(`${CUSTOMER_SELECT} WHERE c.account_id = $1 AND c.customer_id = $2`, [
    accountId,
    customerId,
  ]);
  return r.rows[0] && customerOf(r.rows[0]);
}

/** A page of an account's customers in the order of their ids, after `after` when given. */
export async function listCustomers(
  q: Queryable,
  accountId: string,
  page: { limit: number; after?: string | undefined },
): Promise<CustomerRow[]> {
  const r = await q.query<CustomerDbRow>(
    `${CUSTOMER_SELECT} WHERE c.account_id = $1 AND ($2::text IS NULL OR c.customer_id > $2)
      ORDER BY c.customer_id LIMIT $3`,
    [accountId, page.after ?? null, page.limit],
  );
  return r.rows.map(customerOf);
}
