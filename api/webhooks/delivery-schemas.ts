import { z } from 'zod';
import type { DeliveryView } from '../../service/webhooks/endpoints';

/** A delivery and its attempts as the webhook API shows them: an endpoint's log and the callback log alike. */

const attempt = z
  .object({
    attempt: z.number().int(),
    startedAt: z.string(),
    durationMs: z.number().int(),
    statusCode: z
      .number()
      .int()
      .nullable()
      .describe('The receiver’s HTTP status; null when none came (timeout, refused, network)'),
    error: z.string().nullable(),
    response: z
      .string()
      .nullable()
      .describe(
        'The first 1 KiB of the receiver’s answer; null when none came, or when it came from a loopback or private address (development mode), whose answers are never kept',
      ),
    nextRetryAt: z.string().nullable().describe('When the next attempt is due; null if none will follow'),
  })
  .meta({ id: 'WebhookAttempt' });

export const delivery = z
  .object({
    id: z.string().describe('whd_…: X-Service-Delivery and webhook-id, the same on every attempt'),
    event: z.string(),
    generationId: z.string().nullable().describe('null for a ping'),
    status: z.enum(['pending', 'succeeded', 'failed']),
    attempts: z.array(attempt),
    nextRetryAt: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });

export const deliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  status: z.enum(['pending', 'succeeded', 'failed']).optional(),
});

export const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

export function deliveryOf(d: DeliveryView): z.infer<typeof delivery> {
  return {
    id: d.id,
    event: d.event,
    generationId: d.generationId,
    status: d.status,
    attempts: d.attemptLog.map((a) => ({
      attempt: a.attempt,
      startedAt: a.startedAt.toISOString(),
      durationMs: a.durationMs,
      statusCode: a.statusCode,
      error: a.error,
      response: a.responseExcerpt,
      nextRetryAt: iso(a.nextRetryAt),
    })),
    nextRetryAt: iso(d.nextAttemptAt),
    deliveredAt: iso(d.deliveredAt),
    createdAt: d.createdAt.toISOString(),
  };
}
