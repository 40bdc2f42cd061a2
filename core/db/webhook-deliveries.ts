import { idFloorAt, newId } from '../ids';
import { PING_EVENT } from '../webhooks/events';
import type { Queryable } from './pool';
import { callbackSecretOwner, getCallbackSecret } from './callback-secrets';
import { accountWide, endpointColumns } from './webhook-endpoints';
import type { EndpointRow } from './webhook-endpoints';

/**
 * Webhook deliveries and their attempts (the endpoints are webhook-endpoints.ts). A delivery row is also the outbox entry: it is
 * written by the transaction that records the generation's state, and the relay starts its
 * workflow (`dispatched_at`) afterwards, so a crash in between loses nothing.
 */

/** Woken by every commit that adds deliveries; the relay listens (and also polls). */
export const OUTBOX_CHANNEL = 'gensvc_webhook_outbox';

/** What a delivery is about besides its endpoint and event. */
export interface DeliveryCause {
  generationId: string | null;
  /** The step of a progress delivery (core/webhooks/events.ts), one delivery per step. */
  progress?: number | null;
  /** The account alert an alert event announces (core/db/alerts.ts), one delivery per endpoint. */
  alertId?: string | null;
  /** The batch a batch event is about, one delivery per endpoint and event. */
  batchId?: string | null;
  /**
   * The W3C traceparent of the span that wrote it (tracing on), so that its attempts, in a trace
   * of their own, link back to the work that caused them; null with tracing off.
   */
  traceparent?: string | null;
}

/** Inserts deliveries (the outbox rows) and wakes the relay once the transaction commits. */
export async function enqueueDeliveries(
  tx: Queryable,
  rows: { endpointId: string; accountId: string; event: string }[],
  cause: DeliveryCause,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const ids = rows.map(() => newId('whd'));
  const r = await tx.query<{ id: string }>(
    `WITH ins AS (
       INSERT INTO webhook_deliveries (id, endpoint_id, account_id, generation_id, event, progress, alert_id, trace_parent, batch_id)
       SELECT u.id, u.endpoint_id, u.account_id, $4, u.event, $6, $7, $8, $9
         FROM unnest($1::text[], $2::text[], $3::text[], $5::text[]) AS u (id, endpoint_id, account_id, event)
       ON CONFLICT DO NOTHING
       RETURNING id
     ), wake AS (
       SELECT pg_notify('${OUTBOX_CHANNEL}', '') FROM (SELECT count(*) AS n FROM ins) c WHERE c.n > 0
     )
     SELECT id FROM ins, (SELECT count(*) FROM wake) w`,
    [
      ids,
      rows.map((x) => x.endpointId),
      rows.map((x) => x.accountId),
      cause.generationId,
      rows.map((x) => x.event),
      cause.progress ?? null,
      cause.alertId ?? null,
      cause.traceparent ?? null,
      cause.batchId ?? null,
    ],
  );
  return r.rows.map((x) => x.id);
}

/** A `ping` for POST /api/v1/webhooks/:id/test. */
export async function enqueuePing(
  tx: Queryable,
  endpoint: { id: string; accountId: string },
  traceparent: string | null,
): Promise<string> {
  const [id] = await enqueueDeliveries(
    tx,
    [{ endpointId: endpoint.id, accountId: endpoint.accountId, event: PING_EVENT }],
    { generationId: null, traceparent },
  );
  return id!;
}

// ---- The outbox relay ----

/** Locks a batch of deliveries whose workflow has not been started; other relays skip them. */
export async function claimUndispatched(tx: Queryable, limit: number): Promise<string[]> {
  const r = await tx.query<{ id: string }>(
    'SELECT id FROM webhook_deliveries WHERE dispatched_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED',
    [limit],
  );
  return r.rows.map((x) => x.id);
}

export async function markDispatched(q: Queryable, ids: readonly string[]): Promise<void> {
  if (ids.length > 0)
    await q.query('UPDATE webhook_deliveries SET dispatched_at = now() WHERE id = ANY($1::text[])', [ids]);
}

/**
 * Deletes up to `limit` finished deliveries (their attempts go with them) made before `before`,
 * oldest first; pending ones stay, however old. Walks the time-ordered primary key, not a scan.
 */
export async function pruneFinishedDeliveries(q: Queryable, before: Date, limit: number): Promise<number> {
  const r = await q.query(
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE id < $1 AND status <> 'pending' ORDER BY id LIMIT $2)`,
    [idFloorAt('whd', before.getTime()), limit],
  );
  return r.rowCount ?? 0;
}

// ---- Attempts ----

export interface DeliveryTarget {
  id: string;
  event: string;
  generationId: string | null;
  /** A progress delivery's step; null for every other event. */
  progress: number | null;
  /** An alert event's alert (core/db/alerts.ts); null for every generation event and a ping. */
  alertId: string | null;
  /** A batch event's batch; null for every other event. */
  batchId: string | null;
  /** The W3C traceparent of the span that wrote the delivery; null when tracing was off. */
  traceParent: string | null;
  createdAt: Date;
  /** The endpoint, its secrets those that sign for it: a job's callback carries the account's callback secret. */
  endpoint: EndpointRow;
  /** The associated data its secrets were sealed with (core/webhooks/secret-box.ts). */
  secretOwner: string;
}

export async function loadDeliveryTarget(q: Queryable, deliveryId: string): Promise<DeliveryTarget | undefined> {
  const r = await q.query<
    EndpointRow & {
      d_id: string;
      d_event: string;
      d_generation_id: string | null;
      d_progress: number | null;
      d_alert_id: string | null;
      d_batch_id: string | null;
      d_trace_parent: string | null;
      d_created_at: Date;
    }
  >(
    `SELECT d.id AS d_id, d.event AS d_event, d.generation_id AS d_generation_id, d.progress AS d_progress, d.alert_id AS d_alert_id, d.batch_id AS d_batch_id,
            d.trace_parent AS d_trace_parent, d.created_at AS d_created_at, ${endpointColumns('e.')}
       FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.id = $1`,
    [deliveryId],
  );
  const row = r.rows[0];
  if (!row) return undefined;
  const {
    d_id: id,
    d_event: event,
    d_generation_id: generationId,
    d_progress: progress,
    d_alert_id: alertId,
    d_batch_id: batchId,
    d_trace_parent: traceParent,
    d_created_at: createdAt,
    ...endpoint
  } = row;
  const target = { id, event, generationId, progress, alertId, batchId, traceParent, createdAt };
  if (endpoint.secretSealed !== null) return { ...target, endpoint, secretOwner: endpoint.id };
  // A job's callback signs with the account's callback secret, as it is at this attempt.
  const secret = await getCallbackSecret(q, endpoint.accountId);
  return {
    ...target,
    endpoint: {
      ...endpoint,
      secretSealed: secret?.secretSealed ?? null,
      previousSecretSealed: secret?.previousSecretSealed ?? null,
      previousSecretExpiresAt: secret?.previousSecretExpiresAt ?? null,
    },
    secretOwner: callbackSecretOwner(endpoint.accountId),
  };
}

export interface AttemptResult {
  deliveryId: string;
  endpointId: string;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  delivered: boolean;
  /** The receiver answered 410 Gone: the endpoint is disabled. */
  gone: boolean;
  /** When the next attempt is due; null when none will follow. */
  nextRetryAt: Date | null;
  now: Date;
  /** An endpoint failing for this long without a success is disabled. */
  disableAfterMs: number;
}

/**
 * Records one attempt: its log line, the delivery's state and the endpoint's run of failures, in
 * one transaction. Returns the attempt's number and, when this attempt disabled the endpoint, why;
 * undefined when the delivery no longer exists (its endpoint was deleted).
 */
export async function recordAttempt(
  tx: Queryable,
  a: AttemptResult,
): Promise<{ attempt: number; disabledReason: string | null } | undefined> {
  let disabledReason: string | null = null;
  if (a.delivered) {
    await tx.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [
      a.endpointId,
    ]);
  } else if (a.gone) {
    disabledReason = `The receiver answered 410 Gone on ${a.now.toISOString()}.`;
  } else {
    const r = await tx.query<{ failing_since: Date }>(
      'UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING failing_since',
      [a.endpointId, a.startedAt],
    );
    const since = r.rows[0]?.failing_since;
    if (since && a.now.getTime() - since.getTime() >= a.disableAfterMs) {
      disabledReason = `Every delivery failed since ${since.toISOString()} (last: ${a.error ?? `HTTP ${a.statusCode ?? '?'}`}).`;
    }
  }
  if (disabledReason !== null) {
    await tx.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, disabled_at = $3, updated_at = now() WHERE id = $1 AND enabled`,
      [a.endpointId, disabledReason, a.now],
    );
  }
  const nextRetryAt = a.delivered || disabledReason !== null ? null : a.nextRetryAt;
  const d = await tx.query<{ attempts: number }>(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status_code = $2, last_error = $3, next_attempt_at = $4,
            status = CASE WHEN $5::boolean THEN 'succeeded' WHEN $4::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
            delivered_at = CASE WHEN $5::boolean THEN $6::timestamptz ELSE delivered_at END
      WHERE id = $1 RETURNING attempts`,
    [a.deliveryId, a.statusCode, a.error, nextRetryAt, a.delivered, a.now],
  );
  const attempt = d.rows[0]?.attempts;
  if (attempt === undefined) return undefined;
  await tx.query(
    `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, next_retry_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [a.deliveryId, attempt, a.startedAt, a.durationMs, a.statusCode, a.error, a.responseExcerpt, nextRetryAt],
  );
  return { attempt, disabledReason };
}

/** A delivery that will not be attempted (its endpoint is disabled) ends failed, saying why. */
export async function stopDelivery(q: Queryable, deliveryId: string, reason: string): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = $2 WHERE id = $1 AND status = 'pending'`,
    [deliveryId, reason],
  );
}

// ---- The delivery log ----

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryRow {
  id: string;
  endpointId: string;
  event: string;
  generationId: string | null;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export interface AttemptRow {
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  nextRetryAt: Date | null;
}

/** The delivery's columns, named as DeliveryRow names them; `d` qualifies them in a join. */
const deliveryColumns = (
  d = '',
) => `${d}id, ${d}endpoint_id AS "endpointId", ${d}event, ${d}generation_id AS "generationId",
  ${d}status, ${d}attempts, ${d}last_status_code AS "lastStatusCode", ${d}last_error AS "lastError",
  ${d}next_attempt_at AS "nextAttemptAt", ${d}delivered_at AS "deliveredAt", ${d}created_at AS "createdAt"`;
const DELIVERY_COLUMNS = deliveryColumns();

/** An endpoint's deliveries, newest first, keyset-paged by id (ids are time-ordered). */
export async function listDeliveries(
  q: Queryable,
  endpointId: string,
  f: { limit: number; before?: string | undefined; status?: DeliveryStatus | undefined },
): Promise<DeliveryRow[]> {
  const r = await q.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
      WHERE endpoint_id = $1 AND ($2::text IS NULL OR id < $2) AND ($3::text IS NULL OR status = $3)
      ORDER BY id DESC LIMIT $4`,
    [endpointId, f.before ?? null, f.status ?? null, f.limit],
  );
  return r.rows;
}

export async function getDelivery(
  q: Queryable,
  endpointId: string,
  deliveryId: string,
): Promise<DeliveryRow | undefined> {
  const r = await q.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2`,
    [deliveryId, endpointId],
  );
  return r.rows[0];
}

export async function attemptsOf(q: Queryable, deliveryIds: readonly string[]): Promise<AttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  const r = await q.query<AttemptRow>(
    `SELECT delivery_id AS "deliveryId", attempt, started_at AS "startedAt", duration_ms AS "durationMs", status_code AS "statusCode",
            error, response_excerpt AS "responseExcerpt", next_retry_at AS "nextRetryAt"
       FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt`,
    [deliveryIds],
  );
  return r.rows;
}

/** A redelivery puts the delivery back to pending; its workflow sends it at once. */
export async function reopenDelivery(q: Queryable, deliveryId: string, now: Date): Promise<void> {
  await q.query(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $2 WHERE id = $1`, [
    deliveryId,
    now,
  ]);
}

// ---- The callback log: deliveries to the callback URLs named on the account's jobs ----

export interface CallbackDeliveryRow extends DeliveryRow {
  /** The callback URL, as the job named it. */
  url: string;
  batchId: string | null;
  endpointEnabled: boolean;
  endpointDisabledReason: string | null;
}

const CALLBACK_COLUMNS = `${deliveryColumns('d.')}, d.batch_id AS "batchId", e.url, e.enabled AS "endpointEnabled", e.disabled_reason AS "endpointDisabledReason"`;
const CALLBACK_JOIN = `webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND NOT (${accountWide('e.')})`;

/** The account's callback deliveries, newest first, keyset-paged by id; one job's when `job` names it. */
export async function listCallbackDeliveries(
  q: Queryable,
  accountId: string,
  f: { limit: number; before?: string | undefined; status?: DeliveryStatus | undefined; job?: string | undefined },
): Promise<CallbackDeliveryRow[]> {
  const r = await q.query<CallbackDeliveryRow>(
    `SELECT ${CALLBACK_COLUMNS} FROM ${CALLBACK_JOIN}
      WHERE d.account_id = $1 AND ($2::text IS NULL OR d.id < $2) AND ($3::text IS NULL OR d.status = $3)
        AND ($4::text IS NULL OR e.job_generation_id = $4 OR e.job_batch_id = $4)
      ORDER BY d.id DESC LIMIT $5`,
    [accountId, f.before ?? null, f.status ?? null, f.job ?? null, f.limit],
  );
  return r.rows;
}

/** One callback delivery of the account; another account's reads as not found. */
export async function getCallbackDelivery(
  q: Queryable,
  accountId: string,
  deliveryId: string,
): Promise<CallbackDeliveryRow | undefined> {
  const r = await q.query<CallbackDeliveryRow>(
    `SELECT ${CALLBACK_COLUMNS} FROM ${CALLBACK_JOIN} WHERE d.id = $1 AND d.account_id = $2`,
    [deliveryId, accountId],
  );
  return r.rows[0];
}
