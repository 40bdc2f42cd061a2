import { idFloorAt } from '../ids';
import type { WebhookFormat } from '../webhooks/events';
import type { Queryable } from './pool';

/** An account's webhook endpoints: where its deliveries go, with their sealed secrets and whether they are on. */

export interface EndpointRow {
  id: string;
  accountId: string;
  url: string;
  format: WebhookFormat;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  /** Null for a job's callback: it is signed with the account's callback secret (core/db/callback-secrets.ts). */
  secretSealed: string | null;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  /** A job's callback: the one generation, or the one batch, whose events it receives; null for the account's own endpoints. */
  jobGenerationId: string | null;
  jobBatchId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The account's own endpoints (those it registered, at most five), as opposed to its jobs' callbacks; `e` qualifies the columns. */
export const accountWide = (e = '') => `${e}job_generation_id IS NULL AND ${e}job_batch_id IS NULL`;

/** The endpoint's columns, named as EndpointRow names them; `e` qualifies them in a join. */
export const endpointColumns = (e = '') =>
  `${e}id, ${e}account_id AS "accountId", ${e}url, ${e}format, ${e}events, ${e}description, ${e}enabled,
   ${e}disabled_reason AS "disabledReason", ${e}disabled_at AS "disabledAt", ${e}secret_sealed AS "secretSealed",
   ${e}previous_secret_sealed AS "previousSecretSealed", ${e}previous_secret_expires_at AS "previousSecretExpiresAt",
   ${e}failing_since AS "failingSince", ${e}job_generation_id AS "jobGenerationId", ${e}job_batch_id AS "jobBatchId", ${e}created_at AS "createdAt", ${e}updated_at AS "updatedAt"`;
const ENDPOINT_COLUMNS = endpointColumns();

/** Locks the account (so two registrations cannot both take the last place) and counts its endpoints. */
export async function lockAndCountEndpoints(tx: Queryable, accountId: string): Promise<number> {
  await tx.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  const r = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1 AND ${accountWide()}`,
    [accountId],
  );
  return r.rows[0]?.n ?? 0;
}

export type NewEndpoint = Pick<EndpointRow, 'id' | 'accountId' | 'url' | 'format' | 'events' | 'description'> & {
  secretSealed: string;
};

export async function insertEndpoint(tx: Queryable, e: NewEndpoint): Promise<EndpointRow> {
  const r = await tx.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, account_id, url, format, events, description, secret_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${ENDPOINT_COLUMNS}`,
    [e.id, e.accountId, e.url, e.format, e.events, e.description, e.secretSealed],
  );
  return r.rows[0]!;
}

export async function listEndpoints(q: Queryable, accountId: string): Promise<EndpointRow[]> {
  const r = await q.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND ${accountWide()} ORDER BY id`,
    [accountId],
  );
  return r.rows;
}

/** Another account's endpoint reads as not found. */
export async function getEndpoint(q: Queryable, accountId: string, id: string): Promise<EndpointRow | undefined> {
  const r = await q.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND ${accountWide()}`,
    [id, accountId],
  );
  return r.rows[0];
}

export interface EndpointPatch {
  url?: string | undefined;
  /** null: back to every event of the catalogue. */
  events?: string[] | null | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

/** Applies the fields given; enabling clears the reason it was disabled and its run of failures. */
export async function updateEndpoint(
  q: Queryable,
  accountId: string,
  id: string,
  p: EndpointPatch,
): Promise<EndpointRow | undefined> {
  const r = await q.query<EndpointRow>(
    `UPDATE webhook_endpoints SET
        url = COALESCE($3, url),
        events = CASE WHEN $4::boolean THEN $5::text[] ELSE events END,
        description = CASE WHEN $6::boolean THEN $7 ELSE description END,
        enabled = COALESCE($8, enabled),
        disabled_reason = CASE WHEN $8 IS TRUE THEN NULL WHEN $8 IS FALSE AND enabled THEN 'Disabled through the API.' ELSE disabled_reason END,
        disabled_at = CASE WHEN $8 IS TRUE THEN NULL WHEN $8 IS FALSE AND enabled THEN now() ELSE disabled_at END,
        failing_since = CASE WHEN $8 IS TRUE THEN NULL ELSE failing_since END,
        updated_at = now()
      WHERE id = $1 AND account_id = $2 AND ${accountWide()}
      RETURNING ${ENDPOINT_COLUMNS}`,
    [
      id,
      accountId,
      p.url ?? null,
      p.events !== undefined,
      p.events ?? null,
      p.description !== undefined,
      p.description ?? null,
      p.enabled ?? null,
    ],
  );
  return r.rows[0];
}

export async function deleteEndpoint(q: Queryable, accountId: string, id: string): Promise<boolean> {
  const r = await q.query(`DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND ${accountWide()}`, [
    id,
    accountId,
  ]);
  return (r.rowCount ?? 0) > 0;
}

/** The current secret becomes the previous one, valid until `previousExpiresAt`; an older one is dropped. */
export async function rotateEndpointSecret(
  q: Queryable,
  accountId: string,
  id: string,
  secretSealed: string,
  previousExpiresAt: Date,
): Promise<EndpointRow | undefined> {
  const r = await q.query<EndpointRow>(
    `UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed, previous_secret_expires_at = $4,
            secret_sealed = $3, updated_at = now()
      WHERE id = $1 AND account_id = $2 AND ${accountWide()} RETURNING ${ENDPOINT_COLUMNS}`,
    [id, accountId, secretSealed, previousExpiresAt],
  );
  return r.rows[0];
}

/** A job's callback as its submit names it: where, and which of its events (null: every one of the callback catalogue). */
export interface NewJobCallback {
  id: string;
  accountId: string;
  url: string;
  events: string[] | null;
  job: { generationId: string } | { batchId: string };
}

/**
 * Records a job's callback in the transaction that records the job, before its first event: the
 * job's events then reach it through the outbox like any endpoint's. A second recording for the
 * same job does nothing (one callback per job).
 */
export async function insertJobCallback(tx: Queryable, c: NewJobCallback): Promise<void> {
  await tx.query(
    `INSERT INTO webhook_endpoints (id, account_id, url, format, events, job_generation_id, job_batch_id)
     VALUES ($1, $2, $3, 'flat', $4, $5, $6) ON CONFLICT DO NOTHING`,
    [
      c.id,
      c.accountId,
      c.url,
      c.events,
      'generationId' in c.job ? c.job.generationId : null,
      'batchId' in c.job ? c.job.batchId : null,
    ],
  );
}

/**
 * Deletes up to `limit` jobs' callbacks made before `before` whose deliveries are all gone (the
 * log keeps finished ones for its retention), oldest first: their jobs ended long ago. Walks the
 * time-ordered primary key.
 */
export async function pruneSpentCallbacks(q: Queryable, before: Date, limit: number): Promise<number> {
  const r = await q.query(
    `DELETE FROM webhook_endpoints WHERE id IN (
       SELECT e.id FROM webhook_endpoints e
        WHERE e.id < $1 AND NOT (${accountWide('e.')})
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id)
        ORDER BY e.id LIMIT $2)`,
    [idFloorAt('wh', before.getTime()), limit],
  );
  return r.rowCount ?? 0;
}
