import type pg from 'pg';
import { release, settle, startRunning } from '../../core/ledger';
import type { Resolution, SettleRequest, StartOutcome, StartRequest } from '../../core/ledger';
import type { GenerationFailure } from '../../core/vocabulary';
import type { BatchWaker, ChoiceStopper } from '../batches/lines';
import type { VideoSlotWaker } from './slots';

/**
 * The workflow's ledger steps: each is one call into the ledger (core/ledger), which owns the
 * transaction, makes it idempotent and names failures that cannot heal `LedgerPermanentError`
 * (listed as non-retryable by the workflow). The names are those recorded in workflow
 * histories, so they stay. A settle or release that ends a video frees one of its account's slots:
 * `wakeVideoWaiters` then gives it to the next queued video, after the ledger's commit; one that
 * ends a batch's line wakes the batch's workflow (`wakeBatch`); one that fails a choice of a batch
 * line stops the others still running (`stopChoices`).
 */
export function createLedgerActivities({
  pool,
  wakeVideoWaiters,
  wakeBatch,
  stopChoices,
}: {
  pool: pg.Pool;
  wakeVideoWaiters: VideoSlotWaker;
  /** A batch's line that ended wakes its batch's workflow, which starts the next. */
  wakeBatch: BatchWaker;
  /** A batch line's choice that failed stops the others still running (none of them is charged). */
  stopChoices: ChoiceStopper;
}) {
  return {
    /** Records `running` for a generation that needs no slot. */
    markRunning: (req: StartRequest): Promise<StartOutcome> => startRunning(pool, req),
    async settle(req: SettleRequest): Promise<Resolution> {
      const resolution = await settle(pool, req);
      await wakeVideoWaiters(req.generationId, resolution);
      await wakeBatch(resolution);
      return resolution;
    },
    async release(req: { generationId: string; error: GenerationFailure }): Promise<Resolution> {
      const resolution = await release(pool, req.generationId, req.error);
      await wakeVideoWaiters(req.generationId, resolution);
      await stopChoices(resolution);
      await wakeBatch(resolution);
      return resolution;
    },
  };
}
