import { newId } from '../ids';
import type { Millicredits } from '../money';
import type { AlertEvent } from '../webhooks/events';
import type { BudgetPeriod } from './budgets';
import type { Queryable } from './pool';

/**
 * Account alerts (migration 018): what `balance.low` and `key.budget_reached` announce, kept as
 * they were when detected. Written by the ledger transaction that detected them
 * (core/ledger/alerts.ts); read by the webhook payload, the dashboard's overview and the mailer.
 */
export interface AlertRow {
  id: string;
  accountId: string;
  event: AlertEvent;
  keyId: string | null;
  /** customer.budget_reached: the customer (the platform's own end user). */
  customerId: string | null;
  /** balance.low: available credits after the crossing; key.budget_reached: what the key had spent. */
  amountMc: Millicredits;
  /** balance.low: the threshold; key.budget_reached: the key's budget. */
  limitMc: Millicredits;
  period: BudgetPeriod | null;
  periodStart: Date | null;
  createdAt: Date;
}

const ALERT_COLUMNS = `id, account_id AS "accountId", event, key_id AS "keyId", customer_id AS "customerId", amount_mc AS "amountMc", limit_mc AS "limitMc",
  period, period_start AS "periodStart", created_at AS "createdAt"`;

export type NewAlert = Omit<AlertRow, 'id' | 'createdAt'>;

/**
 * Records an alert unless one of its kind exists (key.budget_reached: once per key, period and
 * budget, by a unique index); the new row, or undefined when it was already there.
 */
export async function insertAlert(tx: Queryable, a: NewAlert): Promise<AlertRow | undefined> {
  const r = await tx.query<AlertRow>(
    `INSERT INTO account_alerts (id, account_id, event, key_id, customer_id, amount_mc, limit_mc, period, period_start)
     VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::bigint, $8, $9) ON CONFLICT DO NOTHING RETURNING ${ALERT_COLUMNS}`,
    [newId('alrt'), a.accountId, a.event, a.keyId, a.customerId, a.amountMc, a.limitMc, a.period, a.periodStart],
  );
  return r.rows[0];
}

export async function getAlert(q: Queryable, id: string): Promise<AlertRow | undefined> {
  const r = await q.query<AlertRow>(`SELECT ${ALERT_COLUMNS} FROM account_alerts WHERE id = $1`, [id]);
  return r.rows[0];
}

/** An account's latest alerts, newest first. */
export async function recentAlerts(q: Queryable, accountId: string, limit: number): Promise<AlertRow[]> {
  const r = await q.query<AlertRow>(
    `SELECT ${ALERT_COLUMNS} FROM account_alerts WHERE account_id = $1 ORDER BY id DESC LIMIT $2`,
    [accountId, limit],
  );
  return r.rows;
}

/** The account's low-balance threshold (null: no alert); false when the account does not exist. */
export async function readLowBalance(
  q: Queryable,
  accountId: string,
): Promise<{ thresholdMc: Millicredits | null } | undefined> {
  const r = await q.query<{ low_balance_mc: number | null }>('SELECT low_balance_mc FROM accounts WHERE id = $1', [
    accountId,
  ]);
  const row = r.rows[0];
  return row ? { thresholdMc: row.low_balance_mc } : undefined;
}
