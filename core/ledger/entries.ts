import type { Queryable } from '../db/pool';
import type { EntryKind } from '../db/ledger-entries';
import type { Millicredits } from '../money';

/** An account's two money columns after a move: what each ledger entry records beside itself. */
export interface AccountMoney {
  balance_mc: number;
  held_mc: number;
}

/** Moves an account's balance, holds and used free replies by the deltas given; the CHECK forbids an overdraft. */
export async function moveAccount(
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

/** The append-only journal: one row per movement, with the account as it stood after it. */
export async function appendEntry(
  tx: Queryable,
  e: {
    accountId: string;
    generationId: string | null;
    /** A batch's own movement (its hold, the release of what its lines did not take). */
    batchId?: string | null;
    entry: EntryKind;
    amountMc: Millicredits;
    after: AccountMoney;
    note: string | null;
  },
): Promise<void> {
  await tx.query(
    `INSERT INTO ledger_entries (account_id, generation_id, batch_id, entry, amount_mc, balance_after_mc, held_after_mc, note)
     VALUES ($1, $2, $8, $3, $4::bigint, $5::bigint, $6::bigint, $7)`,
    [e.accountId, e.generationId, e.entry, e.amountMc, e.after.balance_mc, e.after.held_mc, e.note, e.batchId ?? null],
  );
}
