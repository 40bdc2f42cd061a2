import { readKeyBudget } from '../db/budgets';
import type { BudgetPeriod, KeyBudget } from '../db/budgets';
import type { Queryable } from '../db/pool';
import type { Millicredits } from '../money';
import { recordBudgetReached } from './alerts';

/**
 * A key's budget, decided in the hold's own transaction: the key's budget row is locked before the
 * account's money and held until the transaction ends, so the next hold of the key sees this one
 * in its sum and no two overshoot. A generation's hold and a batch's whole quote are checked alike.
 */

/** A hold for a key: counted against the key's budget when the key has one and the hold costs anything. */
export interface KeyHold {
  accountId: string;
  apiKeyId: string | null;
  /** The key has a budget (as read with the key). */
  budgeted?: boolean | undefined;
  quoteMc: Millicredits;
}

export type KeyBudgetCheck =
  /** No budget applies, or the hold fits: `budget` (when one applies) is what the hold is counted against. */
  | { fits: true; budget: KeyBudget | undefined }
  /** The hold would pass the budget: nothing may be held. */
  | { fits: false; keyId: string; budget: KeyBudget };

/**
 * Locks the key's budget row and tells whether the hold fits it. `alreadyHeld`: a retried step
 * whose hold exists already fits whatever the budget says now.
 */
export async function checkKeyBudget(
  tx: Queryable,
  hold: KeyHold,
  alreadyHeld?: () => Promise<boolean>,
): Promise<KeyBudgetCheck> {
  if (!hold.budgeted || !hold.apiKeyId || hold.quoteMc <= 0) return { fits: true, budget: undefined };
  const budget = await readKeyBudget(tx, hold.apiKeyId, { lock: true });
  if (!budget || budget.spentMc + hold.quoteMc <= budget.maxMc) return { fits: true, budget };
  if (alreadyHeld && (await alreadyHeld())) return { fits: true, budget };
  return { fits: false, keyId: hold.apiKeyId, budget };
}

/** After a hold counted against `budget`: the hold that brings the key's spending to its maximum records the alert. */
export async function afterKeyHold(tx: Queryable, hold: KeyHold, budget: KeyBudget | undefined): Promise<void> {
  if (!budget || !hold.apiKeyId) return;
  const spentMc = budget.spentMc + hold.quoteMc;
  if (spentMc >= budget.maxMc) await recordBudgetReached(tx, hold.accountId, hold.apiKeyId, budget, spentMc);
}

/** A hold the key's budget refused: nothing was held. */
export interface KeyBudgetRefusal {
  outcome: 'over_budget';
  keyId: string;
  requiredMc: Millicredits;
  availableMc: Millicredits;
  maxMc: Millicredits;
  period: BudgetPeriod;
}

/** What a key's budget refusal answers: all the request needs, against what the budget had left before it. */
export function keyBudgetRefusal(
  keyId: string,
  budget: KeyBudget,
  requiredMc: Millicredits,
  /** Held by this request's earlier generations, which `budget.spentMc` counts already. */
  heldBeforeMc: Millicredits,
): KeyBudgetRefusal {
  return {
    outcome: 'over_budget',
    keyId,
    requiredMc,
    availableMc: Math.max(0, budget.maxMc - budget.spentMc + heldBeforeMc),
    maxMc: budget.maxMc,
    period: budget.period,
  };
}

/** A refused hold records the alert in a transaction of its own, after the refusal rolled back. */
export const keyBudgetRefused =
  (accountId: string, keyId: string, budget: KeyBudget) =>
  (tx: Queryable): Promise<void> =>
    recordBudgetReached(tx, accountId, keyId, budget, budget.spentMc);
