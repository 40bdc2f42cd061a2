import type { Queryable } from './pool';

/** The movements the ledger's journal records (core/ledger/entries.ts writes them). */
export type EntryKind = 'credit' | 'hold' | 'charge' | 'release' | 'refund';

export interface StoredLedgerEntry {
  id: number;
  entry: EntryKind;
  amountMc: number;
  balanceAfterMc: number;
  heldAfterMc: number;
  generationId: string | null;
  /** The batch the movement belongs to: its own hold or release, or a charge or release of one of its lines. */
  batchId: string | null;
  keyId: string | null;
  customerId: string | null;
  note: string | null;
  createdAt: Date;
}

/** A page of an account's ledger entries, newest first, strictly before entry `beforeId` when given; only a customer's generations' when given. */
export async function listLedgerEntries(
  q: Queryable,
  accountId: string,
  page: { limit: number; beforeId?: number | undefined; customerId?: string | undefined },
): Promise<StoredLedgerEntry[]> {
  const r = await q.query<{
    id: number;
    entry: EntryKind;
    amount_mc: number;
    balance_after_mc: number;
    held_after_mc: number;
    generation_id: string | null;
    batch_id: string | null;
    api_key_id: string | null;
    customer_id: string | null;
    note: string | null;
    created_at: Date;
  }>(
    `SELECT e.id, e.entry, e.amount_mc, e.balance_after_mc, e.held_after_mc, e.generation_id,
            COALESCE(e.batch_id, g.batch_id) AS batch_id, COALESCE(g.api_key_id, b.api_key_id) AS api_key_id, g.customer_id, e.note, e.created_at
       FROM ledger_entries e LEFT JOIN generations g ON g.id = e.generation_id LEFT JOIN batches b ON b.id = e.batch_id
      WHERE e.account_id = $1 AND ($2::bigint IS NULL OR e.id < $2::bigint) AND ($4::text IS NULL OR g.customer_id = $4)
      ORDER BY e.id DESC LIMIT $3`,
    [accountId, page.beforeId ?? null, page.limit, page.customerId ?? null],
  );
  return r.rows.map((row) => ({
    id: row.id,
    entry: row.entry,
    amountMc: row.amount_mc,
    balanceAfterMc: row.balance_after_mc,
    heldAfterMc: row.held_after_mc,
    generationId: row.generation_id,
    batchId: row.batch_id,
    keyId: row.api_key_id,
    customerId: row.customer_id,
    note: row.note,
    createdAt: row.created_at,
  }));
}
