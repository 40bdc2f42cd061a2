import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { startRunning } from '../core/ledger';

export interface SlotDeps {
  pool: pg.Pool;
  videoConcurrency: number;
  /** How often a waiting video asks again for a slot. */
  slotPollMs?: number;
}

/**
 * Waits, first in first out, for one of the account's video slots; the ledger's claim records
 * `running`. The wait lives inside the activity (polling and heartbeating) rather than in
 * workflow timers, so a long queue does not grow the workflow history, and a crashed worker is
 * noticed by the heartbeat timeout.
 */
export function createSlotActivities({ pool, videoConcurrency, slotPollMs = 250 }: SlotDeps) {
  return {
    async waitForVideoSlot(req: { accountId: string; generationId: string }): Promise<'granted' | 'finished'> {
      const ctx = Context.current();
      for (;;) {
        const outcome = await startRunning(pool, { ...req, kind: 'video', slotLimit: videoConcurrency });
        if (outcome === 'running') return 'granted';
        if (outcome === 'finished') return 'finished';
        ctx.heartbeat();
        await ctx.sleep(slotPollMs);
      }
    },
  };
}
