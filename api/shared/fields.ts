import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import { safeText } from '../../core/text';
import type { Door } from '../../core/vocabulary';
import { generationKind, generationStatus } from './schemas';
import { customerHeaders, customerId, customerOption, keyedBody } from './customers';

/**
 * The request fields every door takes, each rule written once. Doors name some fields their own
 * way (groups A and B say `image_url`, group C `imageUrl`): a builder takes the name its message
 * uses, so each door's error messages stay its own.
 */

/** The longest prompt of an image, video or upscale. Chat prompts are not limited here: the service caps them to what the model takes. */
export const MAX_MEDIA_PROMPT_CHARS = 10_000;

/** The prompt of an image or a video (and of anything written for one). */
export const mediaPrompt = safeText({ trim: true, min: 1, max: MAX_MEDIA_PROMPT_CHARS, label: 'prompt' });

/** An upscale's optional guidance: a media prompt that may be empty. */
export const guidancePrompt = safeText({ trim: true, max: MAX_MEDIA_PROMPT_CHARS });

/** A chat prompt: any length, since long input is capped to what the model accepts. */
export const chatPrompt = safeText({ trim: true, min: 1, label: 'prompt' });

/** A model id or alias, as the catalogue and each door's model list name them. */
export const modelId = safeText({ trim: true, min: 1, max: 100, label: 'model' });

/** A function a chat model may call, named as OpenAI's API allows (group B's chat and Responses). */
export const functionName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, { error: 'a function name is 1 to 64 letters, digits, _ or -' });

/** The name of a structured output's JSON Schema (OpenAI's `json_schema.name`, the Responses API's `text.format.name`). */
export const jsonSchemaName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, { error: 'a schema name is 1 to 64 letters, digits, _ or -' });

/** An input image the service fetches itself (upscale, image-to-video); `name` is the field as the door spells it. */
export const imageUrl = (name: string) =>
  z.url({ protocol: /^https?$/, error: `${name} must be an http(s) URL` }).max(2048);

/**
 * A request's own spending cap in credits (`max_credits`; group C `maxCredits`): a quote above it
 * is refused (402 `max_credits_exceeded`) before anything is fetched for it or held.
 */
export const spendCapField = (name: string) =>
  z
    .number({ error: `${name} must be a number of credits` })
    .finite()
    .min(0, `${name} must be 0 or more`)
    .max(1e12)
    .optional()
    .describe(
      'The most this request may cost, in credits: a quote above it is refused with 402 max_credits_exceeded and nothing is held or charged',
    );

/** The service option of a body's cap; `param` is the field as the door spells it. */
export function spendCapOption(credits: number | null | undefined, param: string) {
  return credits === undefined || credits === null ? {} : { spendCap: { credits, param } };
}

/**
 * A callback URL on the job itself (`webhook` in group A, `callback_url` in group B, `callbackUrl`
 * in group C): the job's events are POSTed there too, signed with the account's callback secret.
 * Checked like an endpoint's URL before anything is held.
 */
export const callbackUrlField = (name: string) =>
  z
    .string({ error: `${name} must be a URL` })
    .max(2048, `${name} must be at most 2048 characters`)
    .optional()
    .describe(
      'https URL that receives this job’s events as signed POSTs (the account’s callback secret; see /api/v1/webhooks/callback-secret). ' +
        'Must not be, or resolve to, a private, loopback or metadata address',
    );

/** Which of the job's events its callback gets (`webhook_events_filter`, `callback_events`, `callbackEvents`). */
export const callbackEventsField = (name: string) =>
  z
    .array(z.string().max(100), { error: `${name} must be a list of event names` })
    .min(1, `${name} must name at least one event`)
    .max(16)
    .optional()
    .describe(
      'The events the callback gets (default: all of them): queued, running (or start), succeeded, failed, completed (both ends), progress (or output); ' +
        'the generation.* names too. A batch’s: completed, failed, cancelled, expired',
    );

/** The service option of a body's callback; the names are its fields as the door spells them. */
export function callbackOption(
  url: string | null | undefined,
  events: readonly string[] | null | undefined,
  names: { param: string; eventsParam: string },
) {
  if (url === undefined || url === null) {
    if (events !== undefined && events !== null)
      throw new InvalidRequestError(`${names.eventsParam} goes with ${names.param}.`, names.eventsParam);
    return {};
  }
  return { callback: { url, events: events ?? undefined, ...names } };
}

/** The Idempotency-Key header (DESIGN §5): the same key and body within 24 h answer the first request again. */
export const idempotencyKey = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1 to 255 visible ASCII characters.')
  .optional();

/** The longest deadline a client may ask for; the kind's own deadline bounds it anyway. */
export const MAX_CLIENT_DEADLINE_SECONDS = 7 * 24 * 3600;
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/**
 * A client's deadline as Replicate's `Cancel-After` takes it: whole or decimal seconds (`90`,
 * `2.5`), or a duration with a unit (`90s`, `500ms`, `5m`, `1h`, `1h30m`). Undefined when it is
 * none of these.
 */
export function parseDeadline(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(t)) return undefined;
  let seconds = 0;
  for (const [, n, unit] of t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) seconds += Number(n) * UNIT_SECONDS[unit!]!;
  return seconds;
}

const deadlineRange = `between 1 second and ${MAX_CLIENT_DEADLINE_SECONDS / 86_400} days`;

/** The `Cancel-After` header of every generate endpoint: the run fails with `timeout` once it passes. */
export const cancelAfterHeader = z
  .string()
  .refine((v) => {
    const s = parseDeadline(v);
    return s !== undefined && s >= 1 && s <= MAX_CLIENT_DEADLINE_SECONDS;
  }, `Cancel-After must be seconds or a duration such as 90s, 5m or 1h30m, ${deadlineRange}.`)
  .optional()
  .describe(
    'A deadline for this generation (seconds, or a duration such as 90s or 5m): unfinished by then, it fails with timeout and nothing is charged. Bounded by the kind’s own deadline',
  );

/** The body's `deadline_seconds` (group C: `deadlineSeconds`): the same deadline as the `Cancel-After` header. */
export const deadlineSeconds = z
  .number({ error: `the deadline must be a number of seconds ${deadlineRange}` })
  .min(1, `the deadline must be ${deadlineRange}`)
  .max(MAX_CLIENT_DEADLINE_SECONDS, `the deadline must be ${deadlineRange}`)
  .optional()
  .describe(
    'Seconds after which an unfinished generation fails with timeout and nothing is charged (like the Cancel-After header; the sooner of both counts). Bounded by the kind’s own deadline',
  );

/**
 * The client's deadline in ms from the `Cancel-After` header and the body's field: the sooner of
 * the two, or undefined when neither was sent. Both were validated by their schemas.
 */
export function clientDeadlineMs(header: string | undefined, bodySeconds: number | undefined): number | undefined {
  const fromHeader = header === undefined ? undefined : parseDeadline(header);
  const seconds = [fromHeader, bodySeconds].filter((s): s is number => s !== undefined);
  return seconds.length === 0 ? undefined : Math.round(Math.min(...seconds) * 1000);
}

/** Headers every generate endpoint of groups A and C reads (RFC 7240 Prefer; Idempotency-Key; Cancel-After). */
export const generateHeaders = z.looseObject({
  'idempotency-key': idempotencyKey.describe(
    'The same key and body within 24 h return the same generation, never a second hold',
  ),
  prefer: z
    .string()
    .optional()
    .describe('respond-async: answer at once with the accepted state instead of waiting for an image or chat'),
  'cancel-after': cancelAfterHeader,
  ...customerHeaders,
});

/** RFC 7240: `Prefer: respond-async` asks for the accepted state at once instead of the result. */
function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '').split(',').some((p) => p.trim().toLowerCase() === 'respond-async');
}

interface KeyedRequest {
  headers: {
    'idempotency-key'?: string | undefined;
    'cancel-after'?: string | undefined;
    'x-customer-id'?: string | undefined;
  };
}

/** The Idempotency-Key with the route and body it stands for, so that only a true repeat is answered again. */
export function idempotencyOf(request: KeyedRequest, route: string, body: unknown) {
  const key = request.headers['idempotency-key'];
  return key === undefined ? undefined : { key, route, body: keyedBody(request.headers, body) };
}

/**
 * The service options of a generate POST of group A or C: its door, `Prefer`, the request's
 * logger, the Idempotency-Key, the client's deadline (`Cancel-After`, or the body's field) and the
 * customer (`X-Customer-Id`, or the body's field).
 */
export function generateOptionsOf(
  request: {
    headers: KeyedRequest['headers'] & { prefer?: string | undefined };
    body: unknown;
    log: FastifyBaseLogger;
  },
  door: Door,
  route: string,
  fromBody: { deadlineSeconds?: number | undefined; customer?: string | undefined } = {},
) {
  const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], fromBody.deadlineSeconds);
  return {
    door,
    respondAsync: prefersAsync(request.headers.prefer),
    log: request.log,
    idempotency: idempotencyOf(request, route, request.body),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...customerOption(request.headers, { customer: fromBody.customer }),
  };
}

/** The query of a page of the account's generations (group A's list, the dashboard's). */
export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  kind: generationKind.optional(),
  status: generationStatus.optional(),
  customer: customerId('customer').optional().describe('Only the generations made for this customer of yours'),
});
