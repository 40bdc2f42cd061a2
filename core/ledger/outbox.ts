import { enqueueDeliveries } from '../db/webhook-deliveries';
import { activeTraceparent } from '../tracing';
import type { AlertRow } from '../db/alerts';
import type { BatchRow } from '../db/batches';
import type { Queryable } from '../db/pool';
import { anyEventFor, eventFor, FLAT_KINDS, PROGRESS_EVENT } from '../webhooks/events';
import type { BatchEvent } from '../webhooks/events';
import type { WebhookFormat } from '../webhooks/events';
import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The webhook outbox side of a status change: which endpoints are owed a delivery when a
 * generation enters `status`, written in the transaction that changed it (the relay starts the
 * deliveries after the commit, so a crash in between loses nothing).
 */

/** Whether any endpoint, of either format, can be owed an event: the one place that decides it. */
export const owesEvent = (kind: GenerationKind, status: GenerationStatus): boolean => anyEventFor(kind, status);

/**
 * One delivery per enabled endpoint of the generation's account that wants what `status` means. A
 * batch's line owes none: its batch's own events tell how it ended (recordBatchEvent).
 */
export async function recordStatusEvent(
  tx: Queryable,
  generationId: string,
  kind: GenerationKind,
  status: GenerationStatus,
): Promise<void> {
  if (!owesEvent(kind, status)) return;
  const r = await tx.query<{ id: string; account_id: string; format: WebhookFormat; events: string[] | null }>(
    `SELECT e.id, e.account_id, e.format, e.events
       FROM generations g JOIN webhook_endpoints e ON e.account_id = g.account_id AND e.enabled
      WHERE g.id = $1 AND g.batch_id IS NULL`,
    [generationId],
  );
  const rows = r.rows.flatMap((e) => {
    const event = eventFor(e.format, kind, status);
    return event && (e.events === null || e.events.includes(event))
      ? [{ endpointId: e.id, accountId: e.account_id, event }]
      : [];
  });
  await enqueueDeliveries(tx, rows, { generationId, traceparent: activeTraceparent() });
}

/**
 * One progress delivery per enabled endpoint of the generation's account that lists
 * `generation.progress`, for a video or upscale still running: written with the progress it
 * reports, once per step (the deliveries' unique index drops a repeat).
 */
export async function recordProgressEvent(tx: Queryable, generationId: string, step: number): Promise<void> {
  const r = await tx.query<{ id: string; account_id: string }>(
    `SELECT e.id, e.account_id
       FROM generations g JOIN webhook_endpoints e ON e.account_id = g.account_id AND e.enabled AND $2 = ANY (e.events)
      WHERE g.id = $1 AND g.status = 'running' AND g.kind = ANY ($3::text[])`,
    [generationId, PROGRESS_EVENT, FLAT_KINDS],
  );
  await enqueueDeliveries(
    tx,
    r.rows.map((e) => ({ endpointId: e.id, accountId: e.account_id, event: PROGRESS_EVENT })),
    { generationId, progress: step, traceparent: activeTraceparent() },
  );
}

/** One delivery of an account alert per enabled endpoint of the account that lists its event (alerts are opt-in). */
export async function recordAlertEvent(tx: Queryable, alert: AlertRow): Promise<void> {
  const r = await tx.query<{ id: string; account_id: string }>(
    'SELECT id, account_id FROM webhook_endpoints WHERE account_id = $1 AND enabled AND $2 = ANY (events)',
    [alert.accountId, alert.event],
  );
  await enqueueDeliveries(
    tx,
    r.rows.map((e) => ({ endpointId: e.id, accountId: e.account_id, event: alert.event })),
    { generationId: null, alertId: alert.id, traceparent: activeTraceparent() },
  );
}

/** One delivery of a batch's event per enabled endpoint of its account that lists it (batch events are opt-in). */
export async function recordBatchEvent(
  tx: Queryable,
  batch: Pick<BatchRow, 'id' | 'accountId'>,
  event: BatchEvent,
): Promise<void> {
  const r = await tx.query<{ id: string; account_id: string }>(
    'SELECT id, account_id FROM webhook_endpoints WHERE account_id = $1 AND enabled AND $2 = ANY (events)',
    [batch.accountId, event],
  );
  await enqueueDeliveries(
    tx,
    r.rows.map((e) => ({ endpointId: e.id, accountId: e.account_id, event })),
    { generationId: null, batchId: batch.id, traceparent: activeTraceparent() },
  );
}
