import { STATUS_CHANNEL } from '../ledger/notify';
import type { Queryable } from './pool';

/** Where a progress figure came from: the provider's own report, or elapsed time against the expected duration. */
export type ProgressSource = 'provider' | 'elapsed';

/**
 * Raises a running generation's recorded progress (never lowers it; at most 99, since 100 is
 * the succeeded record's alone) and, when it rose, announces it on the ledger's channel as
 * `<accountId>:<generationId>:progress:<percent>` in the same statement. Touches neither the
 * generation row nor money. Returns the percent now recorded, or undefined if nothing changed.
 */
export async function recordProgress(q: Queryable, generationId: string, percent: number, source: ProgressSource): Promise<number | undefined> {
  const p = Math.max(0, Math.min(99, Math.floor(percent)));
  const r = await q.query<{ percent: number }>(
    `WITH g AS (SELECT id, account_id FROM generations WHERE id = $1 AND status = 'running'),
          up AS (
            INSERT INTO generation_progress (generation_id, percent, source)
            SELECT id, $2::smallint, $3 FROM g
            ON CONFLICT (generation_id) DO UPDATE SET percent = EXCLUDED.percent, source = EXCLUDED.source, updated_at = now()
              WHERE generation_progress.percent < EXCLUDED.percent
            RETURNING percent)
     SELECT up.percent, pg_notify('${STATUS_CHANNEL}', g.account_id || ':' || g.id || ':progress:' || up.percent) FROM g, up`,
    [generationId, p, source],
  );
  return r.rows[0]?.percent;
}

/** The column that reads a generation's recorded progress with it (null: none recorded). */
export const PROGRESS_COLUMN = `(SELECT p.percent FROM generation_progress p WHERE p.generation_id = generations.id) AS progress_percent`;

/**
 * The column that reads a queued video's place in its account's queue for a slot (1 = next):
 * first in, first out by the time-ordered id, as the slot claim takes them. Null for anything else.
 */
export const QUEUE_POSITION_COLUMN = `CASE WHEN generations.kind = 'video' AND generations.status = 'queued' THEN
    (SELECT count(*)::int FROM generations q WHERE q.account_id = generations.account_id AND q.kind = 'video' AND q.status = 'queued' AND q.id <= generations.id)
  END AS queue_position`;
