import type { GenerationRow } from '../db/generations';
import type { OutputStore } from '../storage';
import { recordOf, viewOf } from '../generation-view';
import { PING_EVENT } from './events';
import type { WebhookFormat } from './events';

export interface PayloadSource {
  event: string;
  format: WebhookFormat;
  endpointId: string;
  /** When the event happened (the transaction that recorded the state change). */
  createdAt: Date;
  /** The generation now; undefined for a ping. */
  generation: GenerationRow | undefined;
}

/**
 * The JSON body of a delivery, built when it is sent, so that `outputUrl` is a fresh signed URL
 * (valid 24 h) even on a retry days later. Finished generations never change, so a terminal event
 * shows the record as it ended; a `queued` or `running` event (catalogue B) shows nothing that
 * only exists later.
 *
 * - catalogue A (`nested`): `{ event, generation: <the group C record> }`
 * - catalogue B (`flat`): `{ event, generation_id, kind, output_url, credits_charged, created_at }`,
 *   `created_at` being the time of the state change.
 */
export async function deliveryPayload(s: PayloadSource, store: OutputStore): Promise<Record<string, unknown>> {
  if (s.event === PING_EVENT || !s.generation) {
    return { event: PING_EVENT, endpoint_id: s.endpointId, created_at: s.createdAt.toISOString() };
  }
  const view = await viewOf(s.generation, store);
  if (s.format === 'nested') return { event: s.event, generation: recordOf(view) };
  const terminal = s.event === 'generation.succeeded' || s.event === 'generation.failed';
  return {
    event: s.event,
    generation_id: view.id,
    kind: view.kind,
    output_url: s.event === 'generation.succeeded' ? view.outputUrl : '',
    credits_charged: terminal ? view.creditsCharged : 0,
    created_at: s.createdAt.toISOString(),
  };
}
