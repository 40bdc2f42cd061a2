import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { inTransaction } from '../core/db/pool';
import { claimVideoSlot } from '../core/db/generations';

export interface SlotDeps {
  pool: pg.Pool;
  videoConcurrency: number;
  /** How often a waiting video asks again for a slot. */
  slotPollMs?: number;
}

/**
 * Waits, first in first out, for one of the account's video slots. The wait lives inside the
 * activity (polling and heartbeating) rather than in workflow timers, so a long queue does not
 * grow the workflow history, and a crashed worker is noticed by the heartbeat timeout.
 */
export function createSlotActivities({ pool, videoConcurrency, slotPollMs = 250 }: SlotDeps) {
  return {
    async waitForVideoSlot(req: { accountId: string; generationId: string }): Promise<'granted' | 'finished'> {
      const ctx = Context.current();
      for (;;) {
        const claim = await inTransaction(pool, (tx) => claimVideoSlot(tx, req.accountId, req.generationId, videoConcurrency));
        if (claim !== 'waiting') return claim;
        ctx.heartbeat();
        await ctx.sleep(slotPollMs);
      }
    },
  };
}
