import { medianOf } from './durations';
import type { Queryable } from './pool';
import type { GenerationKind, GenerationStatus } from '../vocabulary';

/** What a generation's estimates are read for and into (a GenerationRow's fields). */
export interface Estimable {
  id: string;
  kind: GenerationKind;
  status: GenerationStatus;
  progressPercent: number | null;
  queuePosition: number | null;
  measuredSeconds: number | null;
}

/**
 * A succeeded generation's progress is 100 and it has no queue position or ETA: nothing to read.
 * That is every image and chat answered within its call, the hot path, so their reads stay one
 * plain statement; only records still in flight (or failed, which keep where they stopped) pay
 * for the lookups below.
 */
const needsEstimate = (g: Estimable): boolean => g.status !== 'succeeded';

/**
 * Fills progress, queue position and the measured expected duration of the rows that can have
 * them, in one statement for all of them: progress from its own table, a queued video's place in
 * its account's queue (first in, first out by the time-ordered id, as the slot claim takes them),
 * and the median of the model and size's samples while the generation is unfinished.
 */
export async function withEstimates<T extends Estimable>(q: Queryable, rows: T[]): Promise<T[]> {
  const ids = rows.filter(needsEstimate).map((g) => g.id);
  if (ids.length === 0) return rows;
  const r = await q.query<{
    id: string;
    progress_percent: number | null;
    queue_position: number | null;
    measured_seconds: number | null;
  }>({
    name: 'generation-estimates',
    text: `SELECT g.id,
        (SELECT p.percent FROM generation_progress p WHERE p.generation_id = g.id) AS progress_percent,
        CASE WHEN g.kind = 'video' AND g.status = 'queued' THEN
          (SELECT count(*)::int FROM generations w WHERE w.account_id = g.account_id AND w.kind = 'video' AND w.status = 'queued' AND w.id <= g.id)
        END AS queue_position,
        CASE WHEN g.status IN ('queued', 'running') THEN ${medianOf('g')} END AS measured_seconds
      FROM generations g WHERE g.id = ANY($1::text[])`,
    values: [ids],
  });
  const found = new Map(r.rows.map((e) => [e.id, e]));
  return rows.map((g) => {
    const e = found.get(g.id);
    return e
      ? {
          ...g,
          progressPercent: e.progress_percent,
          queuePosition: e.queue_position,
          measuredSeconds: e.measured_seconds,
        }
      : g;
  });
}
