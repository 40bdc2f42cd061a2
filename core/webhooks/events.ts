import type { GenerationKind, GenerationStatus } from '../vocabulary';

/**
 * The two event catalogues of the spec. An endpoint's `format` picks one: `nested` endpoints get
 * catalogue A (a generation finished, every kind, the group C record nested in the payload);
 * `flat` endpoints get catalogue B (every state change of long-running jobs, flat payload).
 */
export type WebhookFormat = 'nested' | 'flat';
export const WEBHOOK_FORMATS: readonly WebhookFormat[] = ['nested', 'flat'];

export const NESTED_EVENTS = ['generation.completed', 'generation.failed'] as const;
export const FLAT_EVENTS = ['generation.queued', 'generation.running', 'generation.succeeded', 'generation.failed'] as const;
export type WebhookEvent = (typeof NESTED_EVENTS)[number] | (typeof FLAT_EVENTS)[number];
/** Sent by POST /api/v1/webhooks/:id/test whatever the endpoint's filter. */
export const PING_EVENT = 'ping';

export const CATALOGUES: Record<WebhookFormat, readonly WebhookEvent[]> = { nested: NESTED_EVENTS, flat: FLAT_EVENTS };

/** Catalogue B is about jobs that take a while (spec: "such as video and upscale"). */
export const FLAT_KINDS: readonly GenerationKind[] = ['video', 'upscale'];

/** The event a generation entering `status` means to an endpoint of `format`, if any. */
export function eventFor(format: WebhookFormat, kind: GenerationKind, status: GenerationStatus): WebhookEvent | undefined {
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

/** Events outside the format's catalogue, for a 400 that names them. */
export function unknownEvents(format: WebhookFormat, events: readonly string[]): string[] {
  return events.filter((e) => !(CATALOGUES[format] as readonly string[]).includes(e));
}
