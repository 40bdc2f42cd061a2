import { ensureCustomer, readCustomerBudget } from '../db/customers';
import type { CustomerBudget } from '../db/customers';
import type { Queryable } from '../db/pool';
import type { Millicredits } from '../money';
import { recordCustomerBudgetReached } from './alerts';

/**
 * A customer's budget (the platform's own end user's), decided in the hold's own transaction as a
 * key's is: the customer's row is locked, then what its generations hold and were charged this
 * period is summed in a statement of its own, so concurrent admissions of one customer, from any
 * API process, take turns and each sees the holds before it. Nothing is counted: settle, release
 * and the reconciler need no step here, and a release gives the budget back.
 */

export type CustomerBudgetCheck =
  /** No budget applies, or the hold fits: `budget` (when one applies) is what the hold is counted against. */
  | { fits: true; budget: CustomerBudget | undefined }
  /** The hold would pass the budget: nothing may be held. */
  | { fits: false; budget: CustomerBudget };

/**
 * Locks the customer (its row made if new) and tells whether a hold of `quoteMc` for generation
 * `generationId` fits its budget. A generation already held (a retried step) always fits.
 */
export async function checkCustomerBudget(
  tx: Queryable,
  g: { id: string; accountId: string; customerId: string; quoteMc: Millicredits },
): Promise<CustomerBudgetCheck> {
  await ensureCustomer(tx, g.accountId, g.customerId);
  const budget = await readCustomerBudget(tx, g.accountId, g.customerId, { lock: true });
  if (!budget || budget.spentMc + g.quoteMc <= budget.maxMc) return { fits: true, budget };
  const held = await tx.query('SELECT 1 FROM holds WHERE generation_id = $1', [g.id]);
  return (held.rowCount ?? 0) > 0 ? { fits: true, budget: undefined } : { fits: false, budget };
}

/** After a hold counted against `budget`: the hold that brings the customer's spending to its maximum records the alert. */
export async function afterCustomerHold(
  tx: Queryable,
  g: { accountId: string; customerId: string; quoteMc: Millicredits },
  budget: CustomerBudget,
): Promise<void> {
  const spentMc = budget.spentMc + g.quoteMc;
  if (spentMc >= budget.maxMc) await recordCustomerBudgetReached(tx, g.accountId, g.customerId, budget, spentMc);
}

/** A refused hold records the alert in a transaction of its own, after the refusal rolled back. */
export const customerBudgetRefused =
  (accountId: string, customerId: string, budget: CustomerBudget) =>
  (tx: Queryable): Promise<void> =>
    recordCustomerBudgetReached(tx, accountId, customerId, budget, budget.spentMc);
