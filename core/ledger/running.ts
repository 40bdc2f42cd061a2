import type pg from 'pg';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import type { GenerationKind, GenerationStatus } from '../vocabulary';
import { classified } from './failures';
import { notifyExpr } from '../db/notify';
import { recordStatusEvent } from './outbox';
import { ledgerSpan } from './span';

/** `running`: it runs now (or already did); `waiting`: no slot yet; `finished`: it ended before it could run. */
export type StartOutcome = 'running' | 'waiting' | 'finished';

export interface StartRequest {
  generationId: string;
  accountId: string;
  kind: GenerationKind;
  /** Kinds that wait for one of the account's slots (videos): at most this many run at once. */
  slotLimit?: number | undefined;
}

/**
 * Moves a queued generation to `running`, with its webhook deliveries, in one transaction; never
 * moves a finished one back. A generation that needs a slot gets it only when its account has
 * one free and no older one of its kind is waiting (first in, first out). The slot is the
 * `running` row itself, so the transaction that settles or releases the hold frees it, whatever
 * ends the job. Locking the account row serialises the claims of one account.
 */
export function startRunning(pool: pg.Pool, req: StartRequest): Promise<StartOutcome> {
  return ledgerSpan('start running', { 'gensvc.generation_id': req.generationId }, () => startIn(pool, req));
}

function startIn(pool: pg.Pool, req: StartRequest): Promise<StartOutcome> {
  return classified(() => inTransaction(pool, async (tx) => {
    const started = req.slotLimit === undefined ? await start(tx, req) : await claimSlot(tx, req, req.slotLimit);
    if (started) {
      await recordStatusEvent(tx, req.generationId, req.kind, 'running');
      return 'running';
    }
    const r = await tx.query<{ status: GenerationStatus }>('SELECT status FROM generations WHERE id = $1', [req.generationId]);
    const status = r.rows[0]?.status;
    if (status === 'running') return 'running';
    if (status === 'queued') return 'waiting';
    return 'finished';
  }));
}

async function start(tx: Queryable, req: StartRequest): Promise<boolean> {
  const moved = await tx.query(
    `UPDATE generations SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now()
      WHERE id = $1 AND status = 'queued' RETURNING ${notifyExpr('account_id', 'id', 'running')}`,
    [req.generationId],
  );
  return (moved.rowCount ?? 0) > 0;
}

/** Videos are the only kind with slots; the literal lets PostgreSQL use the partial index of live videos. */
export async function claimSlot(tx: Queryable, req: Pick<StartRequest, 'generationId' | 'accountId'>, limit: number): Promise<boolean> {
  await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [req.accountId]);
  // clock_timestamp, not now(): this transaction may have begun before the settle that freed the
  // slot committed (it waited on the account lock), and now() would then date the start before
  // the previous job's finish.
  const claimed = await tx.query(
    `UPDATE generations g SET status = 'running', started_at = clock_timestamp(), updated_at = now()
      WHERE g.id = $2 AND g.account_id = $1 AND g.status = 'queued'
        AND (SELECT count(*) FROM generations r
              WHERE r.account_id = $1 AND r.kind = 'video' AND r.status = 'running') < $3
        AND NOT EXISTS (SELECT 1 FROM generations o
              WHERE o.account_id = $1 AND o.kind = 'video' AND o.status = 'queued' AND o.id < $2)
      RETURNING ${notifyExpr('g.account_id', 'g.id', 'running')}`,
    [req.accountId, req.generationId, limit],
  );
  return (claimed.rowCount ?? 0) > 0;
}
