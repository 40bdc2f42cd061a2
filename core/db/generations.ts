import type { Queryable } from './pool';
import type { GenerationError } from './ledger';
import type { Millicredits } from '../money';

export type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed';

export interface GenerationRow {
  id: string;
  accountId: string;
  kind: 'image' | 'video' | 'chat' | 'upscale';
  model: string;
  status: GenerationStatus;
  params: Record<string, unknown>;
  quoteMc: Millicredits;
  chargedMc: Millicredits;
  freeChat: boolean;
  outputKey: string | null;
  outputText: string | null;
  error: GenerationError | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

const COLUMNS = `id, account_id, kind, model, status, params, quote_mc, charged_mc, free_chat, output_key,
  output_text, error, created_at, started_at, finished_at`;

interface Row {
  id: string;
  account_id: string;
  kind: GenerationRow['kind'];
  model: string;
  status: GenerationStatus;
  params: Record<string, unknown>;
  quote_mc: number;
  charged_mc: number;
  free_chat: boolean;
  output_key: string | null;
  output_text: string | null;
  error: GenerationError | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

function fromRow(r: Row): GenerationRow {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    model: r.model,
    status: r.status,
    params: r.params,
    quoteMc: r.quote_mc,
    chargedMc: r.charged_mc,
    freeChat: r.free_chat,
    outputKey: r.output_key,
    outputText: r.output_text,
    error: r.error,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

/** An account only ever sees its own generations: another account's id reads as not found. */
export async function getGeneration(q: Queryable, accountId: string, id: string): Promise<GenerationRow | undefined> {
  const r = await q.query<Row>(`SELECT ${COLUMNS} FROM generations WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return r.rows[0] && fromRow(r.rows[0]);
}

/** Mirrors `running` for jobs that need no slot; never moves a finished generation back. */
export async function markRunning(q: Queryable, id: string): Promise<void> {
  await q.query(
    `UPDATE generations SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
      WHERE id = $1 AND status = 'queued'`,
    [id],
  );
}

export type SlotClaim = 'granted' | 'waiting' | 'finished';

/**
 * Moves a queued video to `running` if its account has a free slot and no older video is waiting
 * (first in, first out). The slot is the `running` row itself, so it is freed by the same
 * transaction that settles or releases the hold, whatever ends the job. Locking the account row
 * serialises claims per account; run this inside a transaction.
 */
export async function claimVideoSlot(tx: Queryable, accountId: string, id: string, limit: number): Promise<SlotClaim> {
  await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  const claimed = await tx.query(
    `UPDATE generations g SET status = 'running', started_at = now(), updated_at = now()
      WHERE g.id = $2 AND g.account_id = $1 AND g.status = 'queued'
        AND (SELECT count(*) FROM generations r
              WHERE r.account_id = $1 AND r.kind = 'video' AND r.status = 'running') < $3
        AND NOT EXISTS (SELECT 1 FROM generations o
              WHERE o.account_id = $1 AND o.kind = 'video' AND o.status = 'queued' AND o.id < $2)`,
    [accountId, id, limit],
  );
  if ((claimed.rowCount ?? 0) > 0) return 'granted';
  const r = await tx.query<{ status: GenerationStatus }>('SELECT status FROM generations WHERE id = $1', [id]);
  const status = r.rows[0]?.status;
  if (status === 'running') return 'granted';
  if (status === 'succeeded' || status === 'failed') return 'finished';
  return 'waiting';
}
