import type pg from 'pg';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import { notifyExpr, takeChange } from '../db/notify';
import { classified } from './failures';
import { recordStatusEvent } from './outbox';
import { ledgerSpan } from './span';
import type { StartOutcome } from './running';

export interface VideoSlotRequest {
  generationId: string;
  accountId: string;
  /** The account's video slots. */
  slotLimit: number;
}

/** A look's outcome, and the other videos whose slots it claimed (their parked waits to complete). */
export interface VideoSlotLook {
  outcome: StartOutcome;
  woken: ClaimedWaiter[];
}

/** A video whose slot was claimed on its behalf, with the token of its parked wait (absent if it never parked). */
export interface ClaimedWaiter {
  generationId: string;
  taskToken: Buffer | undefined;
}

/**
 * One look of a video waiting for its account's slot (docs/decisions/0016-video-slots.md, "A video waiting for its
 * slot holds no worker slot"). Under the account's lock, as every claim, it gives the account's
 * free slots to its oldest queued videos (first in, first out), whether or not their own workflows
 * have looked yet: a burst's oldest video whose first workflow task is still queued does not hold
 * up the rest. If this video is not among them, it leaves `taskToken`, the waiting attempt's, for
 * whoever frees a slot next; a slot freed meanwhile either was claimed here or finds the token
 * parked, never neither. Answers the others claimed too, whose parked waits are to be completed.
 */
export async function claimVideoSlotOrPark(
  pool: pg.Pool,
  req: VideoSlotRequest,
  taskToken: Uint8Array,
): Promise<VideoSlotLook> {
  return look(pool, req, async (tx) => {
    const parked = await tx.query(
      `INSERT INTO video_slot_waits (generation_id, account_id, task_token)
       SELECT id, account_id, $2 FROM generations WHERE id = $1 AND status = 'queued'
       ON CONFLICT (generation_id) DO UPDATE SET task_token = EXCLUDED.task_token, parked_at = now()`,
      [req.generationId, Buffer.from(taskToken)],
    );
    return (parked.rowCount ?? 0) > 0;
  });
}

/**
 * The same look without a wait to park: the first, from the video's own workflow task (a local
 * activity), which answers `waiting` when no slot is free for it, and the workflow then waits with
 * `claimVideoSlotOrPark`. Most videos find their account's slot free, and cost no activity task.
 */
export function claimVideoSlotIfFree(pool: pg.Pool, req: VideoSlotRequest): Promise<VideoSlotLook> {
  return look(pool, req, async (tx) => {
    const r = await tx.query(`SELECT 1 FROM generations WHERE id = $1 AND status = 'queued'`, [req.generationId]);
    return (r.rowCount ?? 0) > 0;
  });
}

/** One look under the account's lock; `waits` answers whether the video, not claimed, still waits (and parks it). */
function look(
  pool: pg.Pool,
  req: VideoSlotRequest,
  waits: (tx: Queryable) => Promise<boolean>,
): Promise<VideoSlotLook> {
  return ledgerSpan('start running', { 'gensvc.generation_id': req.generationId }, () =>
    classified(() =>
      inTransaction(pool, async (tx) => {
        await lockAccount(tx, req.accountId);
        const claimedNow = await claimForOldest(tx, req.accountId, req.slotLimit);
        const woken = claimedNow.filter((w) => w.generationId !== req.generationId);
        if (woken.length < claimedNow.length) return { outcome: 'running', woken };
        if (await waits(tx)) return { outcome: 'waiting', woken };
        // Not queued: claimed on its behalf before this look, or ended before it could run.
        const r = await tx.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [
          req.generationId,
        ]);
        await tx.query('DELETE FROM video_slot_waits WHERE generation_id = $1', [req.generationId]);
        return { outcome: r.rows[0]?.status === 'running' ? 'running' : 'finished', woken };
      }),
    ),
  );
}

/**
 * After a video of the account ended (or left the queue), claims the account's free slots for its
 * oldest queued videos and answers whom to wake. Rows of waits that ended while queued (a cancel,
 * a deadline) are dropped here: nobody will wake them.
 */
export async function claimFreedVideoSlots(
  pool: pg.Pool,
  freedBy: string,
  slotLimit: number,
): Promise<ClaimedWaiter[]> {
  return classified(() =>
    inTransaction(pool, async (tx) => {
      const owner = await tx.query<{ account_id: string }>(
        `SELECT account_id FROM generations WHERE id = $1 AND kind = 'video'`,
        [freedBy],
      );
      const accountId = owner.rows[0]?.account_id;
      if (accountId === undefined) return [];
      await lockAccount(tx, accountId);
      const woken = await claimForOldest(tx, accountId, slotLimit);
      await tx.query(
        `DELETE FROM video_slot_waits w USING generations g WHERE w.account_id = $1 AND g.id = w.generation_id AND g.status <> 'queued'`,
        [accountId],
      );
      return woken;
    }),
  );
}

/** Locked before the oldest is chosen, so that no other claim of the account changes the queue meanwhile. */
async function lockAccount(tx: Queryable, accountId: string): Promise<void> {
  await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
}

/**
 * Claims free slots of the account (whose lock the transaction holds) for its oldest queued videos,
 * in the order their own claims would take them. A claim is the same status change the waiter's
 * own look makes, so whichever comes second finds it `running`, and nothing is claimed twice.
 */
async function claimForOldest(tx: Queryable, accountId: string, slotLimit: number): Promise<ClaimedWaiter[]> {
  const woken: ClaimedWaiter[] = [];
  for (;;) {
    const next = await tx.query<{ id: string }>(
      `SELECT id FROM generations WHERE account_id = $1 AND kind = 'video' AND status = 'queued' ORDER BY id LIMIT 1`,
      [accountId],
    );
    const generationId = next.rows[0]?.id;
    if (generationId === undefined || !(await claimSlot(tx, { generationId, accountId }, slotLimit))) return woken;
    woken.push({ generationId, taskToken: await claimed(tx, generationId) });
  }
}

/** The claim's other writes: its webhook deliveries, and the wait's row taken away (its token answered). */
async function claimed(tx: Queryable, generationId: string): Promise<Buffer | undefined> {
  await recordStatusEvent(tx, generationId, 'video', 'running');
  const r = await tx.query<{ task_token: Buffer }>(
    'DELETE FROM video_slot_waits WHERE generation_id = $1 RETURNING task_token',
    [generationId],
  );
  return r.rows[0]?.task_token;
}

/**
 * Claims one of the account's video slots for a queued video: only when the account has one free
 * and no older video of its is waiting (first in, first out). The slot is the `running` row itself,
 * so the transaction that settles or releases the hold frees it, whatever ends the job. Locking the
 * account row serialises the claims of one account. Videos are the only kind with slots; the
 * literal lets PostgreSQL use the partial index of live videos.
 */
async function claimSlot(
  tx: Queryable,
  req: { generationId: string; accountId: string },
  limit: number,
): Promise<boolean> {
  await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [req.accountId]);
  // clock_timestamp, not now(): this transaction may have begun before the settle that freed the
  // slot committed (it waited on the account lock), and now() would then date the start before
  // the previous job's finish.
  const claimed = await tx.query(
    `WITH ${takeChange('$1')}
     UPDATE generations g SET status = 'running', started_at = clock_timestamp(), updated_at = now(),
            change_seq = (SELECT n FROM change)
      WHERE g.id = $2 AND g.account_id = $1 AND g.status = 'queued'
        AND (SELECT count(*) FROM generations r
              WHERE r.account_id = $1 AND r.kind = 'video' AND r.status = 'running') < $3
        AND NOT EXISTS (SELECT 1 FROM generations o
              WHERE o.account_id = $1 AND o.kind = 'video' AND o.status = 'queued' AND o.id < $2)
      RETURNING ${notifyExpr('g.account_id', 'g.id', 'running')}`,
    [req.accountId, req.generationId, limit],
  );
  return (claimed.rowCount ?? 0) > 0;
}
