import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The events each format sends. An endpoint's `format` picks one set: `nested` endpoints get a
 * generation finished, every kind, the group C record nested in the payload; `flat` endpoints get
 * every state change of long-running jobs, flat payload; `openai` endpoints get OpenAI's events (a
 * batch, a response or a generation ended) in OpenAI's shape, which the official SDKs'
 * `webhooks.unwrap()` verify and parse. The spec and the API's documents call the first two
 * catalogues A and B; the code names them by their formats, as its catalogue is the models'.
 */
export type WebhookFormat = 'nested' | 'flat' | 'openai';
export const WEBHOOK_FORMATS = ['nested', 'flat', 'openai'] as const satisfies readonly WebhookFormat[];

export const NESTED_EVENTS = ['generation.completed', 'generation.failed'] as const;
export const FLAT_EVENTS = [
  'generation.queued',
  'generation.running',
  'generation.succeeded',
  'generation.failed',
] as const;
/** A Responses API request ended, as OpenAI names it (`incomplete`: cut at max_output_tokens). */
export const RESPONSE_EVENTS = [
  'response.completed',
  'response.failed',
  'response.cancelled',
  'response.incomplete',
] as const;
/** Any other generation ended, named in OpenAI's style. */
export const OPENAI_GENERATION_EVENTS = ['generation.completed', 'generation.failed', 'generation.cancelled'] as const;
export type WebhookEvent =
  | (typeof NESTED_EVENTS)[number]
  | (typeof FLAT_EVENTS)[number]
  | (typeof RESPONSE_EVENTS)[number]
  | (typeof OPENAI_GENERATION_EVENTS)[number]
  | BatchEvent;
/**
 * Opt-in in both formats: sent only to an endpoint whose `events` list names it (never to one
 * without a list, which gets its format's state changes), once per 10 % step a video or upscale
 * run crosses (PROGRESS_EVENT_STEP).
 */
export const PROGRESS_EVENT = 'generation.progress';
export const PROGRESS_EVENT_STEP = 10;
/**
 * Account alerts, opt-in in both formats like progress (docs/decisions/0043-account-alerts.md): sent only
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
 * A batch ended (docs/decisions/0073-batch-events.md), opt-in in both formats like progress:
 * sent only to an endpoint whose `events` list names it; its lines send no generation events.
 */
export const BATCH_EVENTS = ['batch.completed', 'batch.failed', 'batch.cancelled', 'batch.expired'] as const;
export type BatchEvent = (typeof BATCH_EVENTS)[number];
/** Sent by POST /api/v1/webhooks/:id/test whatever the endpoint's filter. */
export const PING_EVENT = 'ping';

export const FORMAT_EVENTS: Record<WebhookFormat, readonly WebhookEvent[]> = {
  nested: NESTED_EVENTS,
  flat: FLAT_EVENTS,
  // OpenAI's endpoints are sent batch events without listing them, as OpenAI sends them.
  openai: [...BATCH_EVENTS, ...RESPONSE_EVENTS, ...OPENAI_GENERATION_EVENTS],
};

/** The formats whose endpoints get `event` without listing it. */
export const formatsSendingByDefault = (event: string): WebhookFormat[] =>
  WEBHOOK_FORMATS.filter((format) => (FORMAT_EVENTS[format] as readonly string[]).includes(event));

/** What an ended generation was, beyond its status: what OpenAI's event names tell apart. */
export interface GenerationOutcome {
  /** Made through the Responses API. */
  response: boolean;
  /** Failed because it was cancelled. */
  cancelled: boolean;
  /** Succeeded, cut at its output cap. */
  incomplete: boolean;
}
const ORDINARY: GenerationOutcome = { response: false, cancelled: false, incomplete: false };

/** The `flat` events are about jobs that take a while (spec: "such as video and upscale"). */
export const FLAT_KINDS: readonly GenerationKind[] = ['video', 'upscale'];

/** The event a generation entering `status` means to an endpoint of `format`, if any. */
export function eventFor(
  format: WebhookFormat,
  kind: GenerationKind,
  status: GenerationStatus,
  outcome: GenerationOutcome = ORDINARY,
): WebhookEvent | undefined {
  if (format === 'openai') return openAiEventFor(status, outcome);
  if (format === 'nested') {
    if (status === 'succeeded') return 'generation.completed';
    if (status === 'failed') return 'generation.failed';
    return undefined;
  }
  return FLAT_KINDS.includes(kind) ? `generation.${status}` : undefined;
}

function openAiEventFor(status: GenerationStatus, o: GenerationOutcome): WebhookEvent | undefined {
  if (status === 'succeeded')
    return o.response ? (o.incomplete ? 'response.incomplete' : 'response.completed') : 'generation.completed';
  if (status === 'failed') {
    if (o.response) return o.cancelled ? 'response.cancelled' : 'response.failed';
    return o.cancelled ? 'generation.cancelled' : 'generation.failed';
  }
  return undefined;
}

/**
 * The event a generation entering `status` means to its own callback (a URL named on the job):
 * the `flat` format's, for every kind; a kind that finishes within the call (image, chat) sends only
 * its end, which every format already owes, so a callback adds no lookup to their admission.
 */
export function callbackEventFor(kind: GenerationKind, status: GenerationStatus): WebhookEvent | undefined {
  if (FLAT_KINDS.includes(kind) || status === 'succeeded' || status === 'failed') return `generation.${status}`;
  return undefined;
}

/** Whether any endpoint, of any format, can want an event when a generation of `kind` reaches `status`. */
export function anyEventFor(kind: GenerationKind, status: GenerationStatus): boolean {
  return WEBHOOK_FORMATS.some((format) => eventFor(format, kind, status) !== undefined);
}

/** What an endpoint of `format` may list: its format's events (what it gets without a list), the opt-in progress, alerts and batch events. */
export const subscribable = (format: WebhookFormat): readonly string[] => [
  ...new Set([...FORMAT_EVENTS[format], PROGRESS_EVENT, ...ALERT_EVENTS, ...BATCH_EVENTS]),
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
