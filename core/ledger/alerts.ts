import { insertAlert } from '../db/alerts';
import type { KeyBudget } from '../db/budgets';
import type { Queryable } from '../db/pool';
import type { Millicredits } from '../money';
import { BALANCE_LOW_EVENT, BUDGET_REACHED_EVENT, CUSTOMER_BUDGET_REACHED_EVENT } from '../webhooks/events';
import type { CustomerBudget } from '../db/customers';
import { recordAlertEvent } from './outbox';

/**
 * Alerts are detected by the transaction that moves the money, under the account's (or the key
 * budget's) row lock that move already holds, so concurrent moves take turns and exactly one of
 * them sees a crossing; the alert row and its webhook deliveries commit with the move or not at all.
 */

/**
 * After a move that lowered the account's available credits (a hold, a refund): when they are now
 * below its threshold and the alert is armed, disarms it and records `balance.low`. The caller's
 * transaction already holds the account row's lock (it just updated it).
 */
export async function recordBalanceLow(tx: Queryable, accountId: string): Promise<void> {
  const r = await tx.query<{ available_mc: number; low_balance_mc: number }>(
    `UPDATE accounts SET low_balance_alerted = true
      WHERE id = $1 AND low_balance_mc IS NOT NULL AND NOT low_balance_alerted AND balance_mc - held_mc < low_balance_mc
      RETURNING balance_mc - held_mc AS available_mc, low_balance_mc`,
    [accountId],
  );
  const crossed = r.rows[0];
  if (!crossed) return;
  const alert = await insertAlert(tx, {
    accountId,
    event: BALANCE_LOW_EVENT,
    keyId: null,
    customerId: null,
    amountMc: crossed.available_mc,
    limitMc: crossed.low_balance_mc,
    period: null,
    periodStart: null,
  });
  if (alert) await recordAlertEvent(tx, alert);
}

/**
 * A key's budget is reached: a hold used it up (`spentMc` ≥ its maximum) or was refused by it.
 * Recorded once per key, period and budget (a unique index drops a repeat, whichever admission
 * comes second).
 */
export async function recordBudgetReached(
  tx: Queryable,
  accountId: string,
  keyId: string,
  budget: KeyBudget,
  spentMc: Millicredits,
): Promise<void> {
  const alert = await insertAlert(tx, {
    accountId,
    event: BUDGET_REACHED_EVENT,
    keyId,
    customerId: null,
    amountMc: spentMc,
    limitMc: budget.maxMc,
    period: budget.period,
    periodStart: budget.periodStart,
  });
  if (alert) await recordAlertEvent(tx, alert);
}

/**
 * A customer's budget is reached: a hold used it up or was refused by it. Recorded once per
 * customer, period and budget (a unique index drops a repeat).
 */
export async function recordCustomerBudgetReached(
  tx: Queryable,
  accountId: string,
  customerId: string,
  budget: CustomerBudget,
  spentMc: Millicredits,
): Promise<void> {
  const alert = await insertAlert(tx, {
    accountId,
    event: CUSTOMER_BUDGET_REACHED_EVENT,
    keyId: null,
    customerId,
    amountMc: spentMc,
    limitMc: budget.maxMc,
    period: budget.period,
    periodStart: budget.periodStart,
  });
  if (alert) await recordAlertEvent(tx, alert);
}

/**
 * Sets (or with null removes) the account's low-balance threshold; the alert is armed only while
 * the available credits are at or above it, so a threshold set above them announces nothing until
 * they have been back above it. Undefined when the account does not exist.
 */
export async function setLowBalanceThreshold(
  q: Queryable,
  accountId: string,
  thresholdMc: Millicredits | null,
): Promise<{ availableMc: Millicredits; alerted: boolean } | undefined> {
  const r = await q.query<{ available_mc: number; low_balance_alerted: boolean }>(
    `UPDATE accounts SET low_balance_mc = $2::bigint, low_balance_alerted = ($2::bigint IS NOT NULL AND balance_mc - held_mc < $2::bigint)
      WHERE id = $1 RETURNING balance_mc - held_mc AS available_mc, low_balance_alerted`,
    [accountId, thresholdMc],
  );
  const row = r.rows[0];
  return row ? { availableMc: row.available_mc, alerted: row.low_balance_alerted } : undefined;
}
