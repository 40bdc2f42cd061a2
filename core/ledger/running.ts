import type pg from 'pg';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import type { GenerationKind, GenerationStatus } from '../vocabulary';
import { classified } from './failures';
import { notifyExpr, takeChange } from '../db/notify';
import { recordStatusEvent } from './outbox';
import { ledgerSpan } from './span';

/** `running`: it runs now (or already did); `waiting`: no slot yet; `finished`: it ended before it could run. */
export type StartOutcome = 'running' | 'waiting' | 'finished';

export interface StartRequest {
  generationId: string;
  accountId: string;
  kind: GenerationKind;
}

/**
 * Moves a queued generation that needs no slot to `running`, with its webhook deliveries, in one
 * transaction; never moves a finished one back. (A video's start is its slot claim, core/ledger/video-slots.ts.)
 */
export function startRunning(pool: pg.Pool, req: StartRequest): Promise<StartOutcome> {
  return ledgerSpan('start running', { 'gensvc.generation_id': req.generationId }, () => startIn(pool, req));
}

function startIn(pool: pg.Pool, req: StartRequest): Promise<StartOutcome> {
  return classified(() =>
    inTransaction(pool, async (tx) => {
      const started = await start(tx, req);
      if (started) {
        await recordStatusEvent(tx, req.generationId, req.kind, 'running');
        return 'running';
      }
      const r = await tx.query<{ status: GenerationStatus }>('SELECT status FROM generations WHERE id = $1', [
        req.generationId,
      ]);
      const status = r.rows[0]?.status;
      if (status === 'running') return 'running';
      if (status === 'queued') return 'waiting';
      return 'finished';
    }),
  );
}

async function start(tx: Queryable, req: StartRequest): Promise<boolean> {
  const moved = await tx.query(
    `WITH ${takeChange('$2')}
     UPDATE generations SET status = 'running', started_at = COALESCE(started_at, now()), updated_at = now(),
            change_seq = (SELECT n FROM change)
      WHERE id = $1 AND status = 'queued' RETURNING ${notifyExpr('account_id', 'id', 'running')}`,
    [req.generationId, req.accountId],
  );
  return (moved.rowCount ?? 0) > 0;
}
