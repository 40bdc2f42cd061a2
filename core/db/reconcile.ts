import type { Queryable } from './pool';
import type { GenerationKind } from '../vocabulary';

export interface HeldHold {
  generationId: string;
  kind: GenerationKind;
  heldForMs: number;
  /** The hold had a deadline of its own (a chat the API runs) and it has passed. */
  pastDeadline: boolean;
}

/**
 * Holds still held after `olderThanMs`, oldest first: the ones whose workflow may be gone. A hold
 * with a deadline of its own (its caller resolves it, with no workflow until then) only once that
 * deadline has passed.
 */
export async function findLingeringHolds(q: Queryable, olderThanMs: number, limit: number): Promise<HeldHold[]> {
  const r = await q.query<{ generation_id: string; kind: HeldHold['kind']; held_ms: number; past_deadline: boolean }>(
    `SELECT h.generation_id, g.kind, (extract(epoch FROM now() - h.created_at) * 1000)::bigint AS held_ms,
            h.deadline_at IS NOT NULL AS past_deadline
       FROM holds h JOIN generations g ON g.id = h.generation_id
      WHERE h.state = 'held' AND h.created_at < now() - make_interval(secs => $1::double precision / 1000)
        AND (h.deadline_at IS NULL OR h.deadline_at < now())
      ORDER BY h.created_at
      LIMIT $2`,
    [olderThanMs, limit],
  );
  return r.rows.map((row) => ({
    generationId: row.generation_id,
    kind: row.kind,
    heldForMs: row.held_ms,
    pastDeadline: row.past_deadline,
  }));
}
