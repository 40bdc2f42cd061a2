import type { RouteEntry } from '../vocabulary';
import type { Queryable } from './pool';

/**
 * What the router keeps beyond one call: each upstream's health (the circuit breaker, shared by
 * every process) and, per generation, which upstreams were asked and which served it at what cost.
 * PostgreSQL implements both (core/db/upstreams.ts); without them the router still falls back,
 * with no breaker and no record.
 */
export interface UpstreamHealth {
  /**
   * Whether the upstream may be asked now: it is not cooled down, or its cooldown is over and this
   * caller claimed the probe (the others keep skipping it until the probe's outcome is known).
   */
  admit(upstream: string): Promise<boolean>;
  /** A failure on the upstream's side: one more in a row, which may cool it down. */
  failed(upstream: string): Promise<void>;
  /** It answered (a success, or a refusal about the request): the count in a row starts again. */
  answered(upstream: string): Promise<void>;
}

export interface RouteLog {
  /** Merges a call's entry into the generation's record, once per `call` (a retried run appends to what was tried). */
  record(generationId: string, entry: RouteEntry): Promise<void>;
}

/**
 * The circuit breaker in PostgreSQL (table upstream_health): shared by every process, so one
 * worker's failures cool an upstream down for all of them. A healthy upstream costs one indexed
 * read per call and no write; only failures and the recovery after them write.
 */
export function createPgUpstreamHealth(
  q: Queryable,
  breaker: { failures: number; cooldownMs: number },
): UpstreamHealth {
  return {
    async admit(upstream) {
      const r = await q.query<{ cooled: boolean; over: boolean }>(
        'SELECT cooled_until IS NOT NULL AS cooled, cooled_until <= now() AS over FROM upstream_health WHERE upstream = $1',
        [upstream],
      );
      const row = r.rows[0];
      if (!row?.cooled) return true;
      if (!row.over) return false;
      // The cooldown is over: the first caller to move it on is the probe; the others still skip.
      const claimed = await q.query(
        `UPDATE upstream_health SET cooled_until = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
          WHERE upstream = $1 AND cooled_until <= now()`,
        [upstream, breaker.cooldownMs],
      );
      return claimed.rowCount === 1;
    },
    async failed(upstream) {
      await q.query(
        `INSERT INTO upstream_health AS h (upstream, failures, cooled_until)
           VALUES ($1, 1, CASE WHEN $2::int <= 1 THEN now() + make_interval(secs => $3::double precision / 1000) END)
         ON CONFLICT (upstream) DO UPDATE SET
           failures = h.failures + 1,
           cooled_until = CASE WHEN h.failures + 1 >= $2::int THEN now() + make_interval(secs => $3::double precision / 1000) ELSE h.cooled_until END,
           updated_at = now()`,
        [upstream, breaker.failures, breaker.cooldownMs],
      );
    },
    async answered(upstream) {
      await q.query(
        `UPDATE upstream_health SET failures = 0, cooled_until = NULL, updated_at = now()
          WHERE upstream = $1 AND (failures > 0 OR cooled_until IS NOT NULL)`,
        [upstream],
      );
    },
  };
}

/** Which upstreams a generation's run asked and which served it (table generation_upstreams). */
export function createPgRouteLog(q: Queryable): RouteLog {
  return { record: (generationId, entry) => recordRoute(q, generationId, entry) };
}

/**
 * Merges one router call's entry into a generation's record, once: the router writes it as the
 * upstream answers (best effort) and the settle writes it again in the charge's transaction
 * (durable), so whichever comes second finds its `call` listed and changes nothing.
 */
export async function recordRoute(q: Queryable, generationId: string, entry: RouteEntry): Promise<void> {
  // A streamed chat may have asked an upstream for a request whose hold was then refused: no
  // generation, nothing to record.
  await q.query(
    `INSERT INTO generation_upstreams (generation_id, tried, served_by, cost_eur, calls)
       SELECT id, $2::text[], $3, $4, ARRAY[$5::text] FROM generations WHERE id = $1
     ON CONFLICT (generation_id) DO UPDATE SET
       tried = generation_upstreams.tried || EXCLUDED.tried,
       served_by = COALESCE(EXCLUDED.served_by, generation_upstreams.served_by),
       cost_eur = COALESCE(EXCLUDED.cost_eur, generation_upstreams.cost_eur),
       calls = generation_upstreams.calls || EXCLUDED.calls,
       updated_at = now()
     WHERE NOT generation_upstreams.calls @> EXCLUDED.calls`,
    [generationId, [...entry.tried], entry.servedBy ?? null, entry.costEur ?? null, entry.call],
  );
}

/** The column that reads the upstream that served a generation with it (null: the simulator, or none yet). */
export const SERVED_BY_COLUMN = `(SELECT u.served_by FROM generation_upstreams u WHERE u.generation_id = generations.id) AS served_by`;

/** What the operator sees of a generation's routing. */
export interface GenerationRouting {
  upstream: string | null;
  tried: string[];
  costEur: number | null;
}

/** A generation's routing (nothing asked: it ran on the simulator, or not yet); undefined when there is no such generation. */
export async function generationRouting(q: Queryable, generationId: string): Promise<GenerationRouting | undefined> {
  const r = await q.query<{ served_by: string | null; tried: string[] | null; cost_eur: string | null }>(
    `SELECT u.served_by, u.tried, u.cost_eur FROM generations g LEFT JOIN generation_upstreams u ON u.generation_id = g.id WHERE g.id = $1`,
    [generationId],
  );
  const row = r.rows[0];
  return (
    row && {
      upstream: row.served_by,
      tried: row.tried ?? [],
      costEur: row.cost_eur === null ? null : Number(row.cost_eur),
    }
  );
}
