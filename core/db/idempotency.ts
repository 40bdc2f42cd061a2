import type { Queryable } from './pool';

export type IdempotencyClaim =
  { outcome: 'new'; generationId: string } | { outcome: 'replay'; generationId: string } | { outcome: 'conflict' };

/**
 * Claims an idempotency key for a request, in one statement: the first request (or the first after
 * the entry is 24 h old) records its generation id. Callers claim inside the transaction that
 * places the hold, so a claim exists exactly when its generation does and a refused request (402)
 * does not use up its key. A repeat with the same body gets that id back; a repeat with another
 * body is a conflict.
 */
export async function claimIdempotencyKey(
  q: Queryable,
  c: { accountId: string; key: string; requestHash: Buffer; generationId: string },
): Promise<IdempotencyClaim> {
  const claimed = await q.query<{ generation_id: string }>(
    `INSERT INTO idempotency_keys AS k (account_id, key, request_hash, generation_id)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, generation_id = EXCLUDED.generation_id, created_at = now()
       WHERE k.created_at < now() - interval '24 hours'
     RETURNING generation_id`,
    [c.accountId, c.key, c.requestHash, c.generationId],
  );
  if (claimed.rows[0]) return { outcome: 'new', generationId: c.generationId };
  const existing = await q.query<{ request_hash: Buffer; generation_id: string }>(
    'SELECT request_hash, generation_id FROM idempotency_keys WHERE account_id = $1 AND key = $2',
    [c.accountId, c.key],
  );
  const row = existing.rows[0];
  if (!row) return claimIdempotencyKey(q, c); // expired and removed in between: claim afresh
  return row.request_hash.equals(c.requestHash)
    ? { outcome: 'replay', generationId: row.generation_id }
    : { outcome: 'conflict' };
}

/**
 * What a live claim on this key says about a request, without claiming anything: the read that
 * lets a true repeat skip pricing (and fetching) altogether.
 */
export async function findIdempotencyClaim(
  q: Queryable,
  c: { accountId: string; key: string; requestHash: Buffer },
): Promise<IdempotencyClaim | undefined> {
  const r = await q.query<{ request_hash: Buffer; generation_id: string }>(
    `SELECT request_hash, generation_id FROM idempotency_keys
      WHERE account_id = $1 AND key = $2 AND created_at >= now() - interval '24 hours'`,
    [c.accountId, c.key],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  return row.request_hash.equals(c.requestHash)
    ? { outcome: 'replay', generationId: row.generation_id }
    : { outcome: 'conflict' };
}
