import { ApplicationFailure } from '@temporalio/activity';
import type pg from 'pg';
import { classifyDbError } from '../core/db/errors';
import { inTransaction } from '../core/db/pool';
import { placeHold, releaseHold, settleHold } from '../core/db/ledger';
import type { HoldOutcome, HoldRequest, Resolution, SettleRequest } from '../core/db/ledger';
import { markRunning } from '../core/db/generations';
import { recordResolution } from '../core/metrics';
import type { GenerationFailure } from '../core/vocabulary';

/**
 * Ledger activities: each is one transaction and safe to retry. A database error that will fail
 * the same way every time (invalid input, a constraint, a schema error) is raised as a
 * non-retryable `LedgerPermanentError`, so a poisoned step fails its generation at once instead
 * of retrying forever; anything else (a lost connection, a deadlock) is left to Temporal's bounded
 * retries.
 */
export function createLedgerActivities({ pool }: { pool: pg.Pool }) {
  return {
    placeHold: (req: HoldRequest): Promise<HoldOutcome> => classified(() => inTransaction(pool, (tx) => placeHold(tx, req))),
    settle: async (req: SettleRequest): Promise<Resolution> => recordResolution(await classified(() => inTransaction(pool, (tx) => settleHold(tx, req)))),
    release: async (req: { generationId: string; error: GenerationFailure }): Promise<Resolution> =>
      recordResolution(await classified(() => inTransaction(pool, (tx) => releaseHold(tx, req.generationId, req.error)))),
    markRunning: (req: { generationId: string }): Promise<void> => classified(() => inTransaction(pool, (tx) => markRunning(tx, req.generationId))),
  };
}

async function classified<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (classifyDbError(err) === 'permanent') {
      const code = (err as { code?: string }).code;
      throw ApplicationFailure.create({ type: 'LedgerPermanentError', message: `${(err as Error).message}${code ? ` (SQLSTATE ${code})` : ''}`, nonRetryable: true, cause: err as Error });
    }
    throw err;
  }
}
