import { CompleteAsyncError, Context } from '@temporalio/activity';
import { ActivityNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { claimFreedVideoSlots, claimVideoSlotIfFree, claimVideoSlotOrPark, release } from '../../core/ledger';
import type { ClaimedWaiter, Resolution } from '../../core/ledger';
import { metrics } from '../../core/metrics';
import { closedWorkflowReason } from './closed-workflows';

export interface SlotDeps {
  pool: pg.Pool;
  client: Client;
  videoConcurrency: number;
}

/** How long the completions of one wake may take: past it the waiters' own next looks find them claimed. */
const WAKE_TIMEOUT_MS = 5_000;

/**
 * A video's wait for one of its account's slots, first in first out, holding no worker slot
 * (docs/decisions/0016-video-slots.md). Each attempt of
 * `claimVideoSlot` looks once: the account's free slots go to its oldest queued videos (the ledger
 * records `running`), and if this one is not among them it parks its task token in PostgreSQL and
 * completes asynchronously, returning its activity slot at once. Each look, and each settle or
 * release that frees a slot (`createVideoSlotWaker`), completes the parked waits of the videos it
 * claimed; a wake that is lost leaves the attempt to time out after the workflow's safety poll
 * period, and Temporal's retry is the next look. Nothing of a worker is held between two looks.
 */
export function createSlotActivities(deps: SlotDeps) {
  const { pool, videoConcurrency } = deps;
  return {
    async claimVideoSlot(req: { accountId: string; generationId: string }): Promise<'granted' | 'finished'> {
      const ctx = Context.current();
      const { outcome, woken } = await claimVideoSlotOrPark(
        pool,
        { ...req, slotLimit: videoConcurrency },
        ctx.info.taskToken,
      );
      await handOn(deps, await completeWaits(deps, woken));
      if (outcome === 'running') return 'granted';
      if (outcome === 'finished') return 'finished';
      metrics.videoSlotParks.inc();
      throw new CompleteAsyncError();
    },

    /**
     * The video's first look, from its own workflow task (a local activity): `granted` when a slot
     * of its account is free for it, `waiting` when not, and the workflow then waits with
     * `claimVideoSlot`. A slot free at once costs no activity task and no second workflow task.
     */
    async claimVideoSlotInPlace(req: {
      accountId: string;
      generationId: string;
    }): Promise<'granted' | 'finished' | 'waiting'> {
      const { outcome, woken } = await claimVideoSlotIfFree(pool, { ...req, slotLimit: videoConcurrency });
      await handOn(deps, await completeWaits(deps, woken));
      return outcome === 'running' ? 'granted' : outcome;
    },
  };
}

/** Wakes the waiters a finished generation's slot lets run; called by the activities that free one. */
export type VideoSlotWaker = (generationId: string, resolution: Resolution) => Promise<void>;

/**
 * After a settle or release committed, gives the account's freed video slots to its oldest queued
 * videos (the ledger claims them on their behalf) and completes the parked waits of those claimed.
 * It never fails its caller: the charge or release is already done, and a waiter this misses is
 * found by its own next look.
 */
export function createVideoSlotWaker(deps: SlotDeps): VideoSlotWaker {
  return async (generationId, resolution) => {
    // A repeat ('already') does not say its kind: the claim's own lookup does.
    if (resolution.outcome !== 'already' && resolution.kind !== 'video') return;
    await handOn(deps, [generationId]);
  };
}

/** A hand-on that finds waiter after waiter gone stops here; the reconciler releases the rest. */
const MAX_HAND_ONS = 20;

/**
 * Gives the slots these finished videos freed to the account's oldest queued videos, and wakes
 * them. A claimed video whose workflow has closed (terminated from the Temporal UI while queued)
 * can never use its slot: its hold is released at once and the slot goes on to the next.
 */
async function handOn(deps: SlotDeps, freed: readonly string[]): Promise<void> {
  const queue = [...freed];
  for (let round = 0; round < MAX_HAND_ONS && queue.length > 0; round++) {
    const generationId = queue.shift()!;
    let woken;
    try {
      woken = await claimFreedVideoSlots(deps.pool, generationId, deps.videoConcurrency);
    } catch (err) {
      Context.current().log.warn('freed video slots could not be claimed; the waiters will look again', {
        generationId,
        error: (err as Error).message,
      });
      continue;
    }
    queue.push(...(await completeWaits(deps, woken)));
  }
}

/**
 * Completes the parked waits of videos whose slots were claimed on their behalf. A token whose
 * attempt has timed out meanwhile answers ActivityNotFoundError: harmless while its workflow runs
 * (the claim stands and the next attempt finds the video `running`); a workflow that has closed
 * gets its hold released here. A video claimed before it ever parked is harmless too while its
 * workflow runs (its first look finds it `running`), but one terminated before that look (a start
 * still delayed, a first task not yet taken) would keep the slot until the reconciler: its hold is
 * released here as well. Any other failure is left to the next look. Resolves the videos
 * released, whose slots are free again.
 */
async function completeWaits(deps: SlotDeps, woken: readonly ClaimedWaiter[]): Promise<string[]> {
  const { client } = deps;
  const deadline = Date.now() + WAKE_TIMEOUT_MS;
  const released: string[] = [];
  for (const { generationId, taskToken } of woken) {
    if (taskToken === undefined) {
      // Not found may be a start still on its way (the record is admitted before its workflow starts).
      if (await releaseIfClosed(deps, generationId, { notFound: 'running' })) released.push(generationId);
      continue;
    }
    try {
      await client.withDeadline(deadline, () => client.activity.complete(taskToken, 'granted'));
      metrics.videoSlotWakes.inc({ outcome: 'completed' });
    } catch (err) {
      const stale = err instanceof ActivityNotFoundError;
      metrics.videoSlotWakes.inc({ outcome: stale ? 'stale' : 'failed' });
      if (stale && (await releaseIfClosed(deps, generationId, { notFound: 'closed' }))) released.push(generationId);
      else if (!stale)
        Context.current().log.warn('a claimed video could not be woken; its next look finds it running', {
          generationId,
          error: (err as Error).message,
        });
    }
  }
  return released;
}

/**
 * Releases the hold of a video whose workflow has closed; true when this released it. A workflow
 * not found counts as closed only for a video that has parked (its workflow existed). Never
 * throws: what it cannot settle now is the reconciler's.
 */
async function releaseIfClosed(
  { pool, client }: SlotDeps,
  generationId: string,
  { notFound }: { notFound: 'closed' | 'running' },
): Promise<boolean> {
  let status: string;
  try {
    status = (await client.workflow.getHandle(generationId).describe()).status.name;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError) || notFound === 'running') return false;
    status = 'NOT_FOUND';
  }
  if (status === 'RUNNING') return false;
  try {
    const outcome = await release(pool, generationId, {
      code: closedWorkflowReason(status),
      message: `The workflow of this generation ended (${status.toLowerCase()}) while it waited for a video slot; its hold was released.`,
      retryable: true,
    });
    return outcome.outcome === 'released';
  } catch (err) {
    Context.current().log.warn('the hold of a video whose workflow closed could not be released here', {
      generationId,
      error: (err as Error).message,
    });
    return false;
  }
}
