import type pg from 'pg';
import type { Principal } from '../../core/accounts/principal';
import { markDeleted } from '../../core/db/generations';
import { GenerationUnfinishedError, NotFoundError } from '../../core/errors';
import { readOwn } from '../../core/generation/lookup';
import type { OutputStore } from '../../core/storage/output-store';
import { isFinal } from '../../core/vocabulary';

export interface DeleteDeps {
  pool: pg.Pool;
  store: OutputStore;
}

/**
 * Deletes a finished generation: its stored files (output, previews, inputs) go, and no read shows
 * it again. Money does not move: what it was charged stays charged, and its ledger entries stay.
 * One still queued or running is a 409 (OpenAI deletes only a completed or failed video): it has a
 * file and a settlement still to come, and its client can cancel it first.
 */
export function createDelete(deps: DeleteDeps) {
  const { pool, store } = deps;
  return async (principal: Principal, id: string): Promise<void> => {
    const g = await readOwn(pool, principal.accountId, id);
    if (!isFinal(g.status)) throw new GenerationUnfinishedError(g.id, g.status);
    const keys = [g.outputKey, ...Object.values(g.previewKeys), ...(g.internal.inputKeys ?? []), g.internal.maskKey];
    // Files first: a failure here leaves the generation readable, and deleting it again finishes the job.
    await Promise.all(keys.filter((k): k is string => typeof k === 'string').map((k) => store.remove(k)));
    // A delete answered in between (the same client twice at once) found it gone: not found, as after.
    if (!(await markDeleted(pool, principal.accountId, g.id)))
      throw new NotFoundError(`Generation '${id}' not found.`, { param: 'id' });
  };
}
