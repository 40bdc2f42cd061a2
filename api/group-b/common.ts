import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OutputStore } from '../../core/storage/output-store';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import type { AuthDeps } from '../shared/auth';
import { assertKnownFields } from '../shared/openai/words';
import {
  callbackOption,
  cancelAfterHeader,
  clientDeadlineMs,
  idempotencyKey,
  idempotencyOf,
  spendCapOption,
} from '../shared/fields';
import { customerHeaders, customerOption } from '../shared/customers';
import { apiError } from '../shared/schemas';

/** What every route of group B shares: its deps, its words for parameters and errors, its OpenAPI tags. */

export interface GroupBDeps extends AuthDeps {
  service: GenerationService;
  batches: BatchService;
  store: OutputStore;
}

/** The app a group B plugin is given; its route groups register on it. */
export type GroupBApp = Parameters<FastifyPluginAsyncZod<GroupBDeps>>[0];

/** Refuses a body naming an argument OpenAI's API does not have (assertKnownFields), before validation. */
export function refuseUnknownFields(allowed: readonly string[]) {
  return async (request: FastifyRequest): Promise<void> => assertKnownFields(request.body, allowed);
}

/**
 * The service options of a group B POST: its door, the Idempotency-Key with what it stands for,
 * the client's deadline (`Cancel-After`, or the body's `deadline_seconds`) where the route takes
 * one, and the customer: OpenAI's `safety_identifier` or `user`, a remix's `customer`, or `X-Customer-Id`.
 */
export function submitOptionsOf(
  request: Parameters<typeof idempotencyOf>[0],
  route: string,
  body: unknown,
  bodyDeadlineSeconds?: number | null,
) {
  const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], bodyDeadlineSeconds ?? undefined);
  // Every group B body that submits takes `max_credits` and names a customer its way (validated by its schema).
  const fields = body as {
    max_credits?: number | null;
    safety_identifier?: string | null;
    user?: string | null;
    customer?: string;
    callback_url?: string | null;
    callback_events?: string[] | null;
    webhook?: string;
    webhook_events_filter?: string[];
  };
  return {
    door: 'group-b' as const,
    idempotency: idempotencyOf(request, route, body),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...spendCapOption(fields.max_credits, 'max_credits'),
    ...callbackOf(fields),
    ...customerOption(request.headers, {
      safety_identifier: fields.safety_identifier,
      user: fields.user,
      customer: fields.customer,
    }),
  };
}

/** A submit's callback: OpenRouter's `callback_url` on OpenAI's shapes, the remix body's `webhook` (shared with group A). */
function callbackOf(fields: {
  callback_url?: string | null;
  callback_events?: string[] | null;
  webhook?: string;
  webhook_events_filter?: string[];
}) {
  if (fields.webhook !== undefined)
    return callbackOption(fields.webhook, fields.webhook_events_filter, {
      param: 'webhook',
      eventsParam: 'webhook_events_filter',
    });
  return callbackOption(fields.callback_url, fields.callback_events, {
    param: 'callback_url',
    eventsParam: 'callback_events',
  });
}

/** The headers of a group B POST that submits: its Idempotency-Key, its deadline, its customer. */
export const idempotencyHeaders = z.looseObject({
  'idempotency-key': idempotencyKey.describe(
    'The same key and body within 24 h return the same generations, never a second hold',
  ),
  'cancel-after': cancelAfterHeader,
  ...customerHeaders,
});

export const security = [{ apiKey: [] }];
export const tags = ['Group B (OpenAI-compatible)'];

export function errorsB<const S extends readonly number[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => [s, apiError.describe(`OpenAI error shape: type is the code name, code the status ${s}`)]),
  ) as { [K in S[number]]: typeof apiError };
}

/** An OpenAI list's `limit`: 1 to `max`, `byDefault` when absent. */
export const pageLimit = (max: number, byDefault: number) =>
  z.coerce
    .number()
    .int()
    .min(1, { error: `limit must be between 1 and ${max}` })
    .max(max, { error: `limit must be between 1 and ${max}` })
    .default(byDefault);

/** An OpenAI list's `order` by creation time, newest first by default. */
export const pageOrder = z.enum(['asc', 'desc'], { error: "order must be 'asc' or 'desc'" }).default('desc');

/** OpenAI's cursor page of `item`s: the first and last ids, and whether more follow the last. */
export function openaiPage<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      object: z.literal('list'),
      data: z.array(item),
      first_id: z.string().nullable(),
      last_id: z.string().nullable(),
      has_more: z.boolean(),
    })
    .meta({ id });
}
