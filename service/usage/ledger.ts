import type pg from 'pg';
import { listLedgerEntries } from '../../core/db/ledger-entries';
import type { StoredLedgerEntry } from '../../core/db/ledger-entries';
import { mcToCredits } from '../../core/money';
import type { Principal } from '../../core/accounts/principal';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { csvOf } from './csv';

/** What a movement was, as the account's ledger names it. */
export const LEDGER_ENTRY_TYPES = ['topup', 'adjustment', 'hold', 'charge', 'release', 'refund'] as const;
export type LedgerEntryType = (typeof LEDGER_ENTRY_TYPES)[number];

export interface LedgerEntryView {
  id: string;
  type: LedgerEntryType;
  /**
   * The change of the available balance (GET /api/v1/balance's `balance`): a hold takes, a release
   * and a top-up give back, a charge only turns what was held into what was spent (0).
   */
  amount: number;
  /** The size of the movement, unsigned: what was held, charged, released or added. */
  credits: number;
  balanceAfter: number;
  heldAfter: number;
  generationId: string | null;
  /** The batch it belongs to (its hold, what it released, or a line's charge or release). */
  batchId: string | null;
  keyId: string | null;
  /** The customer (the platform's own end user) whose generation it was; null for none, and for entries of no generation. */
  customer: string | null;
  note: string | null;
  createdAt: string;
}

/** Credits the operator added (`gensvc credits add`, an opening balance) are adjustments; a bought top-up says so in its note. */
const typeOf = (e: StoredLedgerEntry): LedgerEntryType =>
  e.entry === 'credit' ? (e.note?.startsWith('topup') ? 'topup' : 'adjustment') : e.entry;

const signOf: Record<LedgerEntryType, -1 | 0 | 1> = {
  topup: 1,
  adjustment: 1,
  hold: -1,
  charge: 0,
  release: 1,
  refund: -1,
};

function viewOf(e: StoredLedgerEntry): LedgerEntryView {
  const type = typeOf(e);
  return {
    id: String(e.id),
    type,
    amount: signOf[type] * mcToCredits(e.amountMc),
    credits: mcToCredits(e.amountMc),
    balanceAfter: mcToCredits(e.balanceAfterMc - e.heldAfterMc),
    heldAfter: mcToCredits(e.heldAfterMc),
    generationId: e.generationId,
    batchId: e.batchId,
    keyId: e.keyId,
    customer: e.customerId,
    note: e.note,
    createdAt: e.createdAt.toISOString(),
  };
}

const ENTRY_ID = /^\d{1,18}$/;

/** An account's ledger, newest first, a page at a time (the cursor is opaque, like the generation list's); of one customer's generations when given. */
export async function ledgerPage(
  pool: pg.Pool,
  principal: Principal,
  q: { limit: number; cursor?: string | undefined; customer?: string | undefined },
) {
  const beforeId = q.cursor === undefined ? undefined : Number(decodeCursor(q.cursor, ENTRY_ID));
  const rows = await listLedgerEntries(pool, principal.accountId, {
    limit: q.limit + 1,
    beforeId,
    customerId: q.customer,
  });
  const data = rows.slice(0, q.limit).map(viewOf);
  return { data, next_cursor: rows.length > q.limit ? encodeCursor(data.at(-1)!.id) : null };
}

const CSV_COLUMNS = [
  'id',
  'createdAt',
  'type',
  'amount',
  'credits',
  'balanceAfter',
  'heldAfter',
  'generationId',
  'batchId',
  'keyId',
  'customer',
  'note',
] as const;

export function ledgerCsv(entries: readonly LedgerEntryView[]): string {
  return csvOf(CSV_COLUMNS, entries);
}
