import { enqueueDeliveries } from '../db/webhook-deliveries';
import { accountWide } from '../db/webhook-endpoints';
import { activeTraceparent } from '../tracing';
import type { AlertRow } from '../db/alerts';
import type { BatchRow } from '../db/batches';
import type { Queryable } from '../db/pool';
import {
  anyEventFor,
  BATCH_EVENTS,
  callbackEventFor,
  eventFor,
  FLAT_KINDS,
  formatsSendingByDefault,
  PROGRESS_EVENT,
} from '../webhooks/events';
import type { BatchEvent } from '../webhooks/events';
import type { WebhookFormat } from '../webhooks/events';
import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The webhook outbox side of a status change: which endpoints are owed a delivery when a
 * generation enters `status`, written in the transaction that changed it (the relay starts the
 * deliveries after the commit, so a crash in between loses nothing).
 */

/** Whether any endpoint, of any format, can be owed an event: the one place that decides it. */
export const owesEvent = (kind: GenerationKind, status: GenerationStatus): boolean =>
  anyEventFor(kind, status) || callbackEventFor(kind, status) !== undefined;

/**
 * The endpoints of generation `g` that may be owed its events: the account's own (enabled, each
 * found by the account's index) and the generation's own callback, if it named one.
 */
const ENDPOINTS_OF_GENERATION = `LATERAL (
    SELECT id, account_id, format, events, false AS callback FROM webhook_endpoints
     WHERE account_id = g.account_id AND enabled AND ${accountWide()}
    UNION ALL
    SELECT id, account_id, format, events, true AS callback FROM webhook_endpoints
     WHERE job_generation_id = g.id AND enabled
  ) e`;

/**
 * One delivery per enabled endpoint of the generation's account that wants what `status` means,
 * and one to the generation's own callback. A batch's line owes none: its batch's own events tell
 * how it ended (recordBatchEvent).
 */
export async function recordStatusEvent(
  tx: Queryable,
  generationId: string,
  kind: GenerationKind,
  status: GenerationStatus,
): Promise<void> {
  if (!owesEvent(kind, status)) return;
  // OpenAI's event names tell a response from another generation, a cancel from a failure, and a
  // reply cut at its cap (`incomplete`): read from the row as this transaction has just written it.
  const r = await tx.query<{
    id: string;
    account_id: string;
    format: WebhookFormat;
    events: string[] | null;
    callback: boolean;
    response: boolean;
    cancelled: boolean;
    incomplete: boolean;
  }>(
    `SELECT e.id, e.account_id, e.format, e.events, e.callback,
            g.internal ? 'response' AS response,
            COALESCE(g.error->>'code' = 'cancelled', false) AS cancelled,
            COALESCE((g.params->>'outputTokens')::int >= (g.params->>'maxTokens')::int, false) AS incomplete
       FROM generations g CROSS JOIN ${ENDPOINTS_OF_GENERATION}
      WHERE g.id = $1 AND g.batch_id IS NULL`,
    [generationId],
  );
  const rows = r.rows.flatMap((e) => {
    const event = e.callback ? callbackEventFor(kind, status) : eventFor(e.format, kind, status, e);
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
       FROM generations g CROSS JOIN ${ENDPOINTS_OF_GENERATION}
      WHERE g.id = $1 AND g.status = 'running' AND g.kind = ANY ($3::text[]) AND $2 = ANY (e.events)`,
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
    `SELECT id, account_id FROM webhook_endpoints
      WHERE account_id = $1 AND enabled AND $2 = ANY (events) AND ${accountWide()}`,
    [alert.accountId, alert.event],
  );
  await enqueueDeliveries(
    tx,
    r.rows.map((e) => ({ endpointId: e.id, accountId: e.account_id, event: alert.event })),
    { generationId: null, alertId: alert.id, traceparent: activeTraceparent() },
  );
}

/**
 * One delivery of a batch's event per enabled endpoint of its account that lists it, or that has no
 * list and a format that sends it by default (OpenAI's); to the others batch events are opt-in. The
 * batch's own callback gets every batch event, or those its filter lists.
 */
export async function recordBatchEvent(
  tx: Queryable,
  batch: Pick<BatchRow, 'id' | 'accountId'>,
  event: BatchEvent,
): Promise<void> {
  const r = await tx.query<{ id: string; account_id: string }>(
    `SELECT id, account_id FROM webhook_endpoints
      WHERE account_id = $1 AND enabled AND ${accountWide()}
        AND ($2 = ANY (events) OR (events IS NULL AND format = ANY ($3::text[])))
     UNION ALL
     SELECT id, account_id FROM webhook_endpoints
      WHERE job_batch_id = $4 AND enabled AND (events IS NULL OR $2 = ANY (events)) AND $2 = ANY ($5::text[])`,
    [batch.accountId, event, formatsSendingByDefault(event), batch.id, BATCH_EVENTS],
  );
  await enqueueDeliveries(
    tx,
    r.rows.map((e) => ({ endpointId: e.id, accountId: e.account_id, event })),
    { generationId: null, batchId: batch.id, traceparent: activeTraceparent() },
  );
}
