import type { Queryable } from './pool';

/** What a key stands for: the first generation of a request, or the batch a create made. */
export type KeyedJob = { generationId: string } | { batchId: string };

export type IdempotencyClaim = { outcome: 'new' | 'repeat'; id: string } | { outcome: 'conflict' };

interface KeyedClaim {
  accountId: string;
  key: string;
  requestHash: Buffer;
}

/** The column of the job kind a key stands for. */
const columnOf = (job: KeyedJob | 'generation' | 'batch'): 'generation_id' | 'batch_id' =>
  job === 'batch' || (typeof job === 'object' && 'batchId' in job) ? 'batch_id' : 'generation_id';

/** A repeat of the same request (same hash, same kind of job) gets the job's id back; anything else conflicts. */
function claimOf(
  row: { request_hash: Buffer; generation_id: string | null; batch_id: string | null },
  c: KeyedClaim,
  column: 'generation_id' | 'batch_id',
): IdempotencyClaim {
  const id = row[column];
  return id !== null && row.request_hash.equals(c.requestHash) ? { outcome: 'repeat', id } : { outcome: 'conflict' };
}

/**
 * Claims an idempotency key for a request, in one statement: the first request (or the first after
 * the entry is 24 h old) records its job, a generation or a batch. Callers claim inside the
 * transaction that places the hold, so a claim exists exactly when its job does and a refused
 * request (402) does not use up its key. A repeat with the same body gets that job's id back; a
 * repeat with another body (or for another kind of job) is a conflict.
 */
export async function claimIdempotencyKey(q: Queryable, c: KeyedClaim & { job: KeyedJob }): Promise<IdempotencyClaim> {
  const id = 'batchId' in c.job ? c.job.batchId : c.job.generationId;
  const column = columnOf(c.job);
  const claimed = await q.query(
    `INSERT INTO idempotency_keys AS k (account_id, key, request_hash, ${column})
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (account_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, generation_id = EXCLUDED.generation_id,
           batch_id = EXCLUDED.batch_id, created_at = now()
       WHERE k.created_at < now() - interval '24 hours'
     RETURNING 1`,
    [c.accountId, c.key, c.requestHash, id],
  );
  if ((claimed.rowCount ?? 0) > 0) return { outcome: 'new', id };
  const existing = await q.query<{ request_hash: Buffer; generation_id: string | null; batch_id: string | null }>(
    'SELECT request_hash, generation_id, batch_id FROM idempotency_keys WHERE account_id = $1 AND key = $2',
    [c.accountId, c.key],
  );
  const row = existing.rows[0];
  if (!row) return claimIdempotencyKey(q, c); // expired and removed in between: claim afresh
  return claimOf(row, c, column);
}

/**
 * What a live claim on this key says about a request for a job of this kind, without claiming
 * anything: the read that lets a true repeat skip pricing (and fetching) altogether.
 */
export async function findIdempotencyClaim(
  q: Queryable,
  c: KeyedClaim,
  job: 'generation' | 'batch',
): Promise<IdempotencyClaim | undefined> {
  const r = await q.query<{ request_hash: Buffer; generation_id: string | null; batch_id: string | null }>(
    `SELECT request_hash, generation_id, batch_id FROM idempotency_keys
      WHERE account_id = $1 AND key = $2 AND created_at >= now() - interval '24 hours'`,
    [c.accountId, c.key],
  );
  const row = r.rows[0];
  return row ? claimOf(row, c, columnOf(job)) : undefined;
}
