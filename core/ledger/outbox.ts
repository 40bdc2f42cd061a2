import { enqueueDeliveries } from '../db/webhooks';
import type { Queryable } from '../db/pool';
import { anyEventFor, eventFor } from '../webhooks/events';
import type { WebhookFormat } from '../webhooks/events';
import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The webhook outbox side of a status change: which endpoints are owed a delivery when a
 * generation enters `status`, written in the transaction that changed it (the relay starts the
 * deliveries after the commit, so a crash in between loses nothing).
 */

/** Whether any endpoint, of either format, can be owed an event: the one place that decides it. */
export const owesEvent = (kind: GenerationKind, status: GenerationStatus): boolean => anyEventFor(kind, status);

/** One delivery per enabled endpoint of the generation's account that wants what `status` means. */
export async function recordStatusEvent(tx: Queryable, generationId: string, kind: GenerationKind, status: GenerationStatus): Promise<void> {
  if (!owesEvent(kind, status)) return;
  const r = await tx.query<{ id: string; account_id: string; format: WebhookFormat; events: string[] | null }>(
    `SELECT e.id, e.account_id, e.format, e.events
       FROM generations g JOIN webhook_endpoints e ON e.account_id = g.account_id AND e.enabled
      WHERE g.id = $1`,
    [generationId],
  );
  const rows = r.rows.flatMap((e) => {
    const event = eventFor(e.format, kind, status);
    return event && (e.events === null || e.events.includes(event)) ? [{ endpointId: e.id, accountId: e.account_id, event }] : [];
  });
  await enqueueDeliveries(tx, rows, generationId);
}
