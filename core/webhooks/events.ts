import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The two event catalogues of the spec. An endpoint's `format` picks one: `nested` endpoints get
 * catalogue A (a generation finished, every kind, the group C record nested in the payload);
 * `flat` endpoints get catalogue B (every state change of long-running jobs, flat payload).
 */
export type WebhookFormat = 'nested' | 'flat';
export const WEBHOOK_FORMATS: readonly WebhookFormat[] = ['nested', 'flat'];

export const NESTED_EVENTS = ['generation.completed', 'generation.failed'] as const;
export const FLAT_EVENTS = [
  'generation.queued',
  'generation.running',
  'generation.succeeded',
  'generation.failed',
] as const;
export type WebhookEvent = (typeof NESTED_EVENTS)[number] | (typeof FLAT_EVENTS)[number];
/**
 * Opt-in in both catalogues: sent only to an endpoint whose `events` list names it (never to one
 * without a list, which gets its catalogue's state changes), once per 10 % step a video or upscale
 * run crosses (PROGRESS_EVENT_STEP).
 */
export const PROGRESS_EVENT = 'generation.progress';
export const PROGRESS_EVENT_STEP = 10;
/**
 * Account alerts, opt-in in both catalogues like progress (docs/decisions/0043-account-alerts.md): sent only
 * to an endpoint whose `events` list names them. `balance.low`: the account's available credits
 * fell below its threshold (once per crossing); `key.budget_reached`: a key's budget for its
 * period is used up or refused a hold (once per key, period and budget).
 */
export const BALANCE_LOW_EVENT = 'balance.low';
export const BUDGET_REACHED_EVENT = 'key.budget_reached';
/** A customer's budget (the platform's own end user's) for its period is used up or refused a hold. */
export const CUSTOMER_BUDGET_REACHED_EVENT = 'customer.budget_reached';
export const ALERT_EVENTS = [BALANCE_LOW_EVENT, BUDGET_REACHED_EVENT, CUSTOMER_BUDGET_REACHED_EVENT] as const;
export type AlertEvent = (typeof ALERT_EVENTS)[number];
/**
 * A batch ended (docs/decisions/0073-batch-events.md), opt-in in both catalogues like progress:
 * sent only to an endpoint whose `events` list names it; its lines send no generation events.
 */
export const BATCH_EVENTS = ['batch.completed', 'batch.failed', 'batch.cancelled', 'batch.expired'] as const;
export type BatchEvent = (typeof BATCH_EVENTS)[number];
/** Sent by POST /api/v1/webhooks/:id/test whatever the endpoint's filter. */
export const PING_EVENT = 'ping';

export const CATALOGUES: Record<WebhookFormat, readonly WebhookEvent[]> = { nested: NESTED_EVENTS, flat: FLAT_EVENTS };

/** Catalogue B is about jobs that take a while (spec: "such as video and upscale"). */
export const FLAT_KINDS: readonly GenerationKind[] = ['video', 'upscale'];

/** The event a generation entering `status` means to an endpoint of `format`, if any. */
export function eventFor(
  format: WebhookFormat,
  kind: GenerationKind,
  status: GenerationStatus,
): WebhookEvent | undefined {
  if (format === 'nested') {
    if (status === 'succeeded') return 'generation.completed';
    if (status === 'failed') return 'generation.failed';
    return undefined;
  }
  return FLAT_KINDS.includes(kind) ? `generation.${status}` : undefined;
}

/** Whether any endpoint, of either format, can want an event when a generation of `kind` reaches `status`. */
export function anyEventFor(kind: GenerationKind, status: GenerationStatus): boolean {
  return (['nested', 'flat'] as const).some((format) => eventFor(format, kind, status) !== undefined);
}

/** What an endpoint of `format` may list: its catalogue (what it gets without a list), the opt-in progress, alerts and batch events. */
export const subscribable = (format: WebhookFormat): readonly string[] => [
  ...CATALOGUES[format],
  PROGRESS_EVENT,
  ...ALERT_EVENTS,
  ...BATCH_EVENTS,
];

/** Events outside what the format's endpoints may list, for a 400 that names them. */
export function unknownEvents(format: WebhookFormat, events: readonly string[]): string[] {
  return events.filter((e) => !subscribable(format).includes(e));
}

/** The step a run's recorded progress crossed going from `before` to `now` (10, 20 … 90), if any. */
export function progressStepCrossed(before: number | null, now: number): number | undefined {
  const stepOf = (p: number): number => Math.floor(p / PROGRESS_EVENT_STEP) * PROGRESS_EVENT_STEP;
  const step = stepOf(now);
  return step >= PROGRESS_EVENT_STEP && step < 100 && step > stepOf(before ?? 0) ? step : undefined;
}
