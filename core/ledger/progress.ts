import type pg from 'pg';
import { STATUS_CHANNEL } from '../db/notify';
import { recordProgressEvent } from './outbox';
import { progressStepCrossed } from '../webhooks/events';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';

/** Where a progress figure came from: the provider's own report, or elapsed time against the expected duration. */
export type ProgressSource = 'provider' | 'elapsed';

/**
 * Raises a running generation's recorded progress (never lowers it; at most 99, since 100 is
 * the succeeded record's alone) and, when it rose, announces it on the ledger's channel as
 * `<accountId>:<generationId>:progress:<percent>` in the same statement; when it crossed a 10 %
 * step, the progress webhooks owed for that step are written in the same transaction (the
 * outbox's, so a crash loses none and a retried write owes none twice). Touches neither the
 * generation row nor money. Returns the percent now recorded, or undefined if nothing changed.
 */
export async function recordProgress(
  pool: pg.Pool,
  generationId: string,
  percent: number,
  source: ProgressSource,
  { events = true }: { events?: boolean } = {},
): Promise<number | undefined> {
  const p = Math.max(0, Math.min(99, Math.floor(percent)));
  const write = async (tx: Queryable) => {
    // Every part of one statement sees the same snapshot: `before` is the percent until now.
    const r = await tx.query<{ percent: number; before: number | null }>(
      `WITH g AS (SELECT id, account_id FROM generations WHERE id = $1 AND status = 'running'),
            before AS (SELECT percent FROM generation_progress WHERE generation_id = $1),
            up AS (
              INSERT INTO generation_progress (generation_id, percent, source)
              SELECT id, $2::smallint, $3 FROM g
              ON CONFLICT (generation_id) DO UPDATE SET percent = EXCLUDED.percent, source = EXCLUDED.source, updated_at = now()
                WHERE generation_progress.percent < EXCLUDED.percent
              RETURNING percent)
       SELECT up.percent, (SELECT percent FROM before) AS before,
              pg_notify('${STATUS_CHANNEL}', g.account_id || ':' || g.id || ':progress:' || up.percent) FROM g, up`,
      [generationId, p, source],
    );
    const row = r.rows[0];
    if (!row) return undefined;
    const step = events ? progressStepCrossed(row.before, row.percent) : undefined;
    if (step !== undefined) await recordProgressEvent(tx, generationId, step);
    return row.percent;
  };
  // A kind without progress webhooks (`events: false`) owes no outbox rows: one statement, no transaction.
  return events ? inTransaction(pool, write) : write(pool);
}
