import type pg from 'pg';
import { GenerationFinishedError, GenerationStreamingError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import { isFinal } from '../../core/vocabulary';
import { readOwn } from '../../core/generation/lookup';
import type { GenerationGateway } from './temporal-gateway';
import { inputOfRecord, isRecordedByApi } from '../../core/generation/workflow-input';
import type { Deadlines } from '../../core/generation/workflow-input';

export interface CancelDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  /** How long a cancel waits for the workflow to release the hold before answering. */
  cancelWaitMs?: number | undefined;
  deadlines?: Deadlines | undefined;
}

/**
 * Cancels a queued or running generation: its workflow's machine fails it with code `cancelled`
 * and the ledger releases its hold. Cancelling one that is already cancelled answers it again;
 * any other finished generation is a 409 that names its state, and so is a reply the API is
 * streaming (its client stops it by closing the connection, and pays for the tokens it was sent).
 */
export function createCancel(deps: CancelDeps) {
  const { pool, gateway, store } = deps;
  return async (principal: Principal, id: string): Promise<GenerationView> => {
    const g = await readOwn(pool, principal.accountId, id);
    if (!isFinal(g.status) && isRecordedByApi(g)) throw new GenerationStreamingError(g.id);
    if (!isFinal(g.status)) {
      await gateway.cancel(inputOfRecord(g, deps.deadlines), 'cancelled by the client');
      await gateway.awaitFinish(id, deps.cancelWaitMs ?? 10_000);
    }
    const after = await readOwn(pool, principal.accountId, id);
    const cancelled = after.status === 'failed' && after.error?.code === 'cancelled';
    if (isFinal(after.status) && !cancelled) throw new GenerationFinishedError(after.id, after.status);
    return viewOf(after, store);
  };
}
