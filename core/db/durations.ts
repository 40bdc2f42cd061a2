import type { Queryable } from './pool';

/** Samples kept per model and size: the median of the latest ones follows a provider that speeds up or slows down. */
export const DURATION_SAMPLES = 25;
/** Fewer samples than this and the catalogue's default is the estimate. */
export const MIN_DURATION_SAMPLES = 3;

/**
 * The size a duration is measured for, from a generation's params (in SQL, so a read and a write
 * agree): a video's resolution and seconds (`1080p/10s`), an image's pixels (`1024x1024`), an
 * upscale's factor (`x2`); empty for a chat.
 */
const sizeKey = (t: string): string =>
  `coalesce(${t}.params->>'resolution', (${t}.params->>'width') || 'x' || (${t}.params->>'height'), 'x' || (${t}.params->>'scale'), '')
   || coalesce('/' || (${t}.params->>'seconds') || 's', '')`;

/** The median of what the model and size measured, in seconds, with enough samples; else null. */
export const medianOf = (t: string): string =>
  `(SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM generation_durations d, unnest(d.samples) s
     WHERE d.model = ${t}.model AND d.size = ${sizeKey(t)} AND cardinality(d.samples) >= ${MIN_DURATION_SAMPLES})`;

/**
 * Adds the time a generation's run took (from when it went running until now, its output stored)
 * to its model and size's samples, keeping the latest DURATION_SAMPLES. Written by the provider
 * step when the run succeeded; the ledger's rows are only read.
 */
export async function recordDuration(q: Queryable, generationId: string): Promise<void> {
  await q.query(
    `INSERT INTO generation_durations AS d (model, size, samples)
     SELECT g.model, ${sizeKey('g')}, ARRAY[extract(epoch FROM clock_timestamp() - g.started_at)::real]
       FROM generations g WHERE g.id = $1 AND g.started_at IS NOT NULL
     ON CONFLICT (model, size) DO UPDATE
       SET samples = (d.samples || EXCLUDED.samples)[greatest(1, cardinality(d.samples) + 2 - ${DURATION_SAMPLES}):], updated_at = now()`,
    [generationId],
  );
}

/** A generation's measured expected duration in seconds, or undefined without enough samples. */
export async function measuredSeconds(q: Queryable, generationId: string): Promise<number | undefined> {
  const r = await q.query<{ m: number | null }>(`SELECT ${medianOf('g')} AS m FROM generations g WHERE g.id = $1`, [
    generationId,
  ]);
  return r.rows[0]?.m ?? undefined;
}
