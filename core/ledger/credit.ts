import { insertAccount } from '../db/accounts';
import type { Queryable } from '../db/pool';
import type { Plan } from '../plans';
import type { Millicredits } from '../money';
import type { AccountMoney } from './entries';
import { notifyExpr } from '../db/notify';

/**
 * Adds credits (an opening balance, a top-up) in one statement: the balance and its ledger entry
 * move together. Atomic by itself, so it also runs inside a caller's transaction (an account
 * created with its opening balance). Money coming in that lifts the available credits back to the
 * account's low-balance threshold re-arms its `balance.low` alert (core/ledger/alerts.ts).
 */
export async function credit(
  q: Queryable,
  accountId: string,
  amountMc: Millicredits,
  note: string,
): Promise<AccountMoney | undefined> {
  const r = await q.query<AccountMoney>(
    `WITH a AS (
       UPDATE accounts SET balance_mc = balance_mc + $2::bigint,
              low_balance_alerted = low_balance_alerted AND low_balance_mc IS NOT NULL AND balance_mc + $2::bigint - held_mc < low_balance_mc
        WHERE id = $1 RETURNING id, balance_mc, held_mc
     ), e AS (
       INSERT INTO ledger_entries (account_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
       SELECT id, 'credit', $2::bigint, balance_mc, held_mc, $3 FROM a
     )
     SELECT balance_mc, held_mc, ${notifyExpr('id', "''", 'credited')} FROM a`,
    [accountId, amountMc, note],
  );
  return r.rows[0];
}

/** A new account with its opening balance, in the caller's transaction. */
export async function openAccount(
  tx: Queryable,
  a: { id: string; plan: Plan; creditsMc: Millicredits; chatCap: number },
): Promise<void> {
  await insertAccount(tx, a);
  if (a.creditsMc > 0) await credit(tx, a.id, a.creditsMc, 'opening balance');
}
