import type pg from 'pg';
import { inTransaction } from '../core/db/pool';
import { placeHold, releaseHold, settleHold } from '../core/db/ledger';
import type { GenerationError, HoldOutcome, HoldRequest, Resolution, SettleRequest } from '../core/db/ledger';
import { markRunning } from '../core/db/generations';

/** Ledger activities: each is one transaction and safe to retry. */
export function createLedgerActivities({ pool }: { pool: pg.Pool }) {
  return {
    placeHold: (req: HoldRequest): Promise<HoldOutcome> => inTransaction(pool, (tx) => placeHold(tx, req)),
    settle: (req: SettleRequest): Promise<Resolution> => inTransaction(pool, (tx) => settleHold(tx, req)),
    release: (req: { generationId: string; error: GenerationError }): Promise<Resolution> =>
      inTransaction(pool, (tx) => releaseHold(tx, req.generationId, req.error)),
    markRunning: (req: { generationId: string }): Promise<void> => inTransaction(pool, (tx) => markRunning(tx, req.generationId)),
  };
}
