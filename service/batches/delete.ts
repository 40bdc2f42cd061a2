import type pg from 'pg';
import { deleteEndedBatch } from '../../core/db/batches';
import type { BatchRow } from '../../core/db/batches';
import { BatchNotEndedError } from '../../core/errors';
import type { Principal } from '../../core/accounts/principal';
import { isFinalBatch } from '../../core/vocabulary';
import type { BatchFormat } from '../../core/vocabulary';

/**
 * Deleting a batch that has ended: it is gone for every door (reads answer 404), while its lines'
 * generations and the ledger's entries stay, as the account's history. One still running is 409
 * `batch_not_ended`: it is cancelled first.
 */
export function createBatchDelete(deps: {
  pool: pg.Pool;
  own: (principal: Principal, id: string, format?: BatchFormat) => Promise<BatchRow>;
}) {
  return async function remove(principal: Principal, id: string, format?: BatchFormat): Promise<{ id: string }> {
    const b = await deps.own(principal, id, format);
    if (!isFinalBatch(b.status) || !(await deleteEndedBatch(deps.pool, principal.accountId, b.id)))
      throw new BatchNotEndedError(b.id, b.status);
    return { id: b.id };
  };
}
