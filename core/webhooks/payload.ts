import type { AlertRow } from '../db/alerts';
import type { BatchCounts, BatchRow } from '../db/batches';
import type { GenerationRow } from '../db/generations';
import { mcToCredits } from '../money';
import type { OutputStore } from '../storage/output-store';
import { recordOf, viewOf } from '../generation/view';
import { PING_EVENT, PROGRESS_EVENT } from './events';
import type { WebhookFormat } from './events';

export interface PayloadSource {
  /** The delivery's id: an OpenAI-format event's own id, as its `webhook-id` header is. */
  deliveryId: string;
  event: string;
  format: WebhookFormat;
  endpointId: string;
  /** When the event happened (the transaction that recorded the state change). */
  createdAt: Date;
  /** The generation now; undefined for a ping. */
  generation: GenerationRow | undefined;
  /** A progress event's step (10 … 90): what the run had reached when the event was recorded. */
  progress?: number | null | undefined;
  /** An alert event's alert (`balance.low`, `key.budget_reached`); undefined for every other event. */
  alert?: AlertRow | undefined;
  /** A batch event's batch as it is now, with its line counts; undefined for every other event. */
  batch?: { row: BatchRow; counts: BatchCounts } | undefined;
}

/**
 * The JSON body of a delivery, built when it is sent, so that `outputUrl` is a fresh signed URL
 * (valid 24 h) even on a retry days later. Finished generations never change, so a terminal event
 * shows the record as it ended; a `queued` or `running` event (`flat`) shows nothing that
 * only exists later.
 *
 * - `nested`: `{ event, generation: <the group C record> }`
 * - `flat`: `{ event, generation_id, kind, output_url, credits_charged, created_at }`,
 *   `created_at` being the time of the state change.
 * - a generation made for a customer of the platform carries its id in both: the record's
 *   `customer`, the flat payload's `customer`.
 * - `generation.progress` (opt-in, either format): the format's shape as of a running generation,
 *   plus `progress`, the 10 % step it reached.
 * - `balance.low` and `key.budget_reached` (opt-in, either format): see alertPayload.
 * - every event to an `openai` endpoint: see openAiEvent.
 */
export async function deliveryPayload(s: PayloadSource, store: OutputStore): Promise<Record<string, unknown>> {
  if (s.format === 'openai') return openAiEvent(s);
  if (s.alert) return alertPayload(s.alert, s.format);
  if (s.batch) return batchPayload(s.event, s.batch.row, s.batch.counts, s.format);
  if (s.event === PING_EVENT || !s.generation) {
    return { event: PING_EVENT, endpoint_id: s.endpointId, created_at: s.createdAt.toISOString() };
  }
  const view = await viewOf(s.generation, store);
  if (s.event === PROGRESS_EVENT) {
    // As it was at the step, whatever it has become since: running, nothing charged or made yet.
    const progress = s.progress ?? 0;
    if (s.format === 'nested') {
      return {
        event: s.event,
        progress,
        generation: { ...recordOf(view), status: 'running', outputUrl: '', creditsCharged: 0, error: null },
      };
    }
    return {
      event: s.event,
      generation_id: view.id,
      kind: view.kind,
      progress,
      output_url: '',
      credits_charged: 0,
      created_at: s.createdAt.toISOString(),
      ...customerField(view.customer),
    };
  }
  if (s.format === 'nested') return { event: s.event, generation: recordOf(view) };
  const terminal = s.event === 'generation.succeeded' || s.event === 'generation.failed';
  return {
    event: s.event,
    generation_id: view.id,
    kind: view.kind,
    output_url: s.event === 'generation.succeeded' ? view.outputUrl : '',
    credits_charged: terminal ? view.creditsCharged : 0,
    created_at: s.createdAt.toISOString(),
    ...customerField(view.customer),
  };
}

/**
 * OpenAI's event object, `{ id, object: "event", type, created_at, data: { id } }`: the thing that
 * happened is named, never shown (the receiver reads it back, as OpenAI's receivers do with
 * `batches.retrieve` or `responses.retrieve`). `data.id` is the batch's, the response's (a
 * generation's) or the alert's id; a ping names its endpoint. `created_at` is unix seconds.
 */
function openAiEvent(s: PayloadSource): Record<string, unknown> {
  const subject = s.batch?.row.id ?? s.alert?.id ?? s.generation?.id ?? s.endpointId;
  return {
    id: s.deliveryId,
    object: 'event',
    type: s.event,
    created_at: Math.floor(s.createdAt.getTime() / 1000),
    data: { id: subject },
  };
}

/** The flat payload's `customer`, only for a generation made for one (the spec's fields stay as they are otherwise). */
const customerField = (customer: string | null) => (customer === null ? {} : { customer });

/**
 * An account alert as it was detected: nested `{ event, alert: { id, accountId, … } }` (camelCase,
 * like the group C record), flat `{ event, alert_id, account_id, …, created_at }` (snake_case,
 * like the `flat` generation events). Amounts in credits.
 */
export function alertPayload(a: AlertRow, format: WebhookFormat): Record<string, unknown> {
  const fields: [string, string, unknown][] =
    a.event === 'balance.low'
      ? [
          ['availableCredits', 'available_credits', mcToCredits(a.amountMc)],
          ['thresholdCredits', 'threshold_credits', mcToCredits(a.limitMc)],
        ]
      : [
          a.event === 'customer.budget_reached' ? ['customer', 'customer', a.customerId] : ['keyId', 'key_id', a.keyId],
          ['spentCredits', 'spent_credits', mcToCredits(a.amountMc)],
          ['maxCredits', 'max_credits', mcToCredits(a.limitMc)],
          ['period', 'period', a.period],
          ['periodStart', 'period_start', a.periodStart?.toISOString() ?? null],
        ];
  const createdAt = a.createdAt.toISOString();
  if (format === 'nested') {
    return {
      event: a.event,
      alert: {
        id: a.id,
        accountId: a.accountId,
        ...Object.fromEntries(fields.map(([camel, , v]) => [camel, v])),
        createdAt,
      },
    };
  }
  return {
    event: a.event,
    alert_id: a.id,
    account_id: a.accountId,
    ...Object.fromEntries(fields.map(([, snake, v]) => [snake, v])),
    created_at: createdAt,
  };
}

/**
 * A batch's event (`batch.completed`, `batch.failed`, `batch.cancelled`, `batch.expired`): nested
 * `{ event, batch: { id, endpoint, status, requestCounts, … } }` (camelCase, like the group C record),
 * flat `{ event, batch_id, endpoint, status, request_counts, …, created_at }` (snake_case, like
 * the `flat` generation events; `created_at` the time of the event). Credits charged are the batch's lines' charges.
 */
export function batchPayload(
  event: string,
  b: BatchRow,
  counts: BatchCounts,
  format: WebhookFormat,
): Record<string, unknown> {
  const requestCounts = { total: b.total, completed: counts.completed, failed: counts.failed };
  const finishedAt = b.completedAt ?? b.cancelledAt ?? b.expiredAt ?? b.failedAt;
  if (format === 'nested') {
    return {
      event,
      batch: {
        id: b.id,
        endpoint: b.endpoint,
        status: b.status,
        requestCounts,
        outputFileId: b.outputFileId,
        errorFileId: b.errorFileId,
        creditsCharged: mcToCredits(counts.chargedMc),
        metadata: b.metadata,
        createdAt: b.createdAt.toISOString(),
        finishedAt: finishedAt?.toISOString() ?? null,
      },
    };
  }
  return {
    event,
    batch_id: b.id,
    endpoint: b.endpoint,
    status: b.status,
    request_counts: requestCounts,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    credits_charged: mcToCredits(counts.chargedMc),
    created_at: (finishedAt ?? b.createdAt).toISOString(),
  };
}
