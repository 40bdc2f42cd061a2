import type { Queryable } from './pool';

/** An upstream job as the tables upstream_jobs and upstream_callback_receipts key it. */
export interface UpstreamJobKey {
  upstream: string;
  jobId: string;
}

/** Records a job a run left waiting at its upstream; a retried submit of the same job changes nothing. */
export async function recordUpstreamJob(q: Queryable, job: UpstreamJobKey & { generationId: string }): Promise<void> {
  await q.query(
    `INSERT INTO upstream_jobs (upstream, job_id, generation_id) VALUES ($1, $2, $3) ON CONFLICT (upstream, job_id) DO NOTHING`,
    [job.upstream, job.jobId, job.generationId],
  );
}

/**
 * Leaves the waiting attempt's task token for the webhook to complete, unless the job is already
 * known to have ended. One statement: a webhook marking the job ended either sees this token or is
 * seen by it, so neither side misses the other.
 */
export async function parkUpstreamJob(
  q: Queryable,
  job: UpstreamJobKey,
  taskToken: Uint8Array,
): Promise<'parked' | 'ended'> {
  const r = await q.query<{ ended: boolean }>(
    `UPDATE upstream_jobs SET task_token = $3 WHERE upstream = $1 AND job_id = $2 RETURNING ended_at IS NOT NULL AS ended`,
    [job.upstream, job.jobId, Buffer.from(taskToken)],
  );
  // A job with no row (recorded by code before this table): only the poll can tell.
  return r.rows[0]?.ended ? 'ended' : 'parked';
}

/** Whether the job is known to have ended (its webhook came). */
export async function upstreamJobEnded(q: Queryable, job: UpstreamJobKey): Promise<boolean> {
  const r = await q.query<{ ended: boolean }>(
    'SELECT ended_at IS NOT NULL AS ended FROM upstream_jobs WHERE upstream = $1 AND job_id = $2',
    [job.upstream, job.jobId],
  );
  return r.rows[0]?.ended ?? false;
}

/** Marks the job ended (the slow poll found it so); answers the token of the attempt waiting for it, if any. */
export async function endUpstreamJob(q: Queryable, job: UpstreamJobKey): Promise<Buffer | undefined> {
  const r = await q.query<{ task_token: Buffer | null }>(
    `UPDATE upstream_jobs SET ended_at = now() WHERE upstream = $1 AND job_id = $2 AND ended_at IS NULL RETURNING task_token`,
    [job.upstream, job.jobId],
  );
  return r.rows[0]?.task_token ?? undefined;
}

export type WebhookReceipt =
  /** Seen before: nothing changes. */
  | { outcome: 'replayed' }
  /** No job of ours by that id (another system's, or long gone). */
  | { outcome: 'unknown' }
  /** Its job had already ended (the poll was first). */
  | { outcome: 'already' }
  /** The job is now ended; `taskToken` is the waiting attempt to complete, when one is parked. */
  | { outcome: 'ended'; taskToken: Buffer | undefined };

/**
 * A verified webhook saying the job ended: its id is recorded (so a replay changes nothing) and the
 * job marked ended, in one transaction the caller owns. A webhook for no job of ours leaves no
 * receipt, so the upstream's own retry of it can still count once the job is recorded.
 */
export async function receiveUpstreamWebhook(
  q: Queryable,
  job: UpstreamJobKey & { webhookId: string },
): Promise<WebhookReceipt> {
  const found = await q.query<{ task_token: Buffer | null; ended: boolean }>(
    'SELECT task_token, ended_at IS NOT NULL AS ended FROM upstream_jobs WHERE upstream = $1 AND job_id = $2 FOR UPDATE',
    [job.upstream, job.jobId],
  );
  const row = found.rows[0];
  if (!row) return { outcome: 'unknown' };
  const fresh = await q.query(
    'INSERT INTO upstream_callback_receipts (upstream, webhook_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    [job.upstream, job.webhookId],
  );
  if (fresh.rowCount !== 1) return { outcome: 'replayed' };
  if (row.ended) return { outcome: 'already' };
  await q.query('UPDATE upstream_jobs SET ended_at = now() WHERE upstream = $1 AND job_id = $2', [
    job.upstream,
    job.jobId,
  ]);
  return { outcome: 'ended', taskToken: row.task_token ?? undefined };
}
