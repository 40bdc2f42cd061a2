import type pg from 'pg';
import { admit, release, settle, startRunning } from '../../core/ledger';
import type { Resolution, SettleRequest, StartOutcome, StartRequest } from '../../core/ledger';
import type { GenerationFailure, GenerationKind } from '../../core/vocabulary';
import type { VideoSlotWaker } from './slots';

/**
 * The workflow's ledger steps: each is one call into the ledger (core/ledger), which owns the
 * transaction, makes it idempotent and names failures that cannot heal `LedgerPermanentError`
 * (listed as non-retryable by the workflow). The names are those recorded in workflow
 * histories, so they stay. A settle or release that ends a video frees one of its account's slots:
 * `wakeVideoWaiters` then gives it to the next queued video, after the ledger's commit.
 */
export function createLedgerActivities({ pool, wakeVideoWaiters }: { pool: pg.Pool; wakeVideoWaiters: VideoSlotWaker }) {
  return {
    /** Records `running` for a generation that needs no slot. */
    markRunning: (req: StartRequest): Promise<StartOutcome> => startRunning(pool, req),
    async settle(req: SettleRequest): Promise<Resolution> {
      const resolution = await settle(pool, req);
      await wakeVideoWaiters(req.generationId, resolution);
      return resolution;
    },
    async release(req: { generationId: string; error: GenerationFailure }): Promise<Resolution> {
      const resolution = await release(pool, req.generationId, req.error);
      await wakeVideoWaiters(req.generationId, resolution);
      return resolution;
    },
    /**
     * The hold of a workflow that places its own (workflows/generation/legacy-admission.ts): the same
     * admission as the API's, answered in the shape those workflows read.
     */
    async placeHold(req: LegacyHoldRequest): Promise<LegacyHoldOutcome> {
      const g = req.generation;
      const admission = await admit(pool, [{ ...g, quoteMc: req.amountMc, freeChat: req.freeChat }]);
      if (admission.outcome === 'refused') return { admitted: false, requiredMc: admission.requiredMc, availableMc: admission.availableMc };
      if (admission.outcome !== 'admitted') throw new Error('a hold request without an Idempotency-Key cannot be a replay');
      const [one] = admission.generations;
      return { admitted: true, free: one!.free, model: one!.model, amountMc: one!.amountMc, createdAt: admission.createdAt };
    },
  };
}

export interface LegacyHoldRequest {
  generation: { id: string; accountId: string; apiKeyId: string | null; kind: GenerationKind; model: string; params: Record<string, unknown>; prompt: string };
  amountMc: number;
  freeChat?: { model: string };
}

export type LegacyHoldOutcome =
  | { admitted: true; free: boolean; model: string; amountMc: number; createdAt: Date }
  | { admitted: false; requiredMc: number; availableMc: number };
