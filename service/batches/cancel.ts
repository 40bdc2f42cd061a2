import type pg from 'pg';
import { countsOfBatch } from '../../core/db/batches';
import type { BatchRow } from '../../core/db/batches';
import { BatchFinishedError } from '../../core/errors';
import { requestBatchCancel } from '../../core/ledger';
import type { Principal } from '../../core/accounts/principal';
import type { BatchFormat } from '../../core/vocabulary';
import type { BatchGateway } from './temporal-gateway';
import { batchViewOf } from './read';
import type { BatchView } from './types';

/**
 * Cancelling a batch: it shows `cancelling` at once, its workflow is told (and would see it at its
 * next look anyway): lines not started never run and what they held is released; lines in flight
 * are cancelled like any generation, their holds released; then it is `cancelled`, within seconds.
 * Cancelling a batch that is cancelling or cancelled answers it again; one that has ended
 * otherwise is 409 `batch_finished`.
 */
export function createBatchCancel(deps: {
  pool: pg.Pool;
  gateway: BatchGateway;
  own: (principal: Principal, id: string, format?: BatchFormat) => Promise<BatchRow>;
  log: (message: string, err: unknown) => void;
}) {
  return async function cancel(principal: Principal, id: string, format?: BatchFormat): Promise<BatchView> {
    const before = await deps.own(principal, id, format);
    const asked = await requestBatchCancel(deps.pool, principal.accountId, before.id);
    const b = asked ?? (await deps.own(principal, id));
    if (!asked && b.status !== 'cancelling' && b.status !== 'cancelled') throw new BatchFinishedError(b.id, b.status);
    if (asked)
      await deps.gateway.cancel(b, 'cancelled through the API').catch((err: unknown) => {
        deps.log(`batch ${b.id}: its workflow could not be told of the cancel; it sees it at its next look`, err);
      });
    return batchViewOf(b, await countsOfBatch(deps.pool, b.id));
  };
}
