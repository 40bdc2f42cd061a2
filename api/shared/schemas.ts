import { z } from 'zod';
import { USAGE_GROUPS } from '../../core/db/usage';
import { PLANS } from '../../core/plans';
import { RESOLUTIONS } from '../../core/generation/params';
import type { PublicParams } from '../../core/generation/params';
import { GENERATION_KINDS, GENERATION_STATUSES } from '../../core/vocabulary';
import { recordOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { customerId } from './customers';

/**
 * Schemas of what the API answers, shared by every door. Routes declare them, so the handlers are
 * type-checked against them and the OpenAPI document (/openapi.json) is generated from them: the
 * description cannot drift from the code. What requests send is in fields.ts and generate-bodies.ts,
 * or with the one door that reads it.
 */

/** The one error body of every group (DESIGN §6); extra fields such as `required` may follow. */
export const apiError = z
  .object({
    error: z.looseObject({
      message: z.string().describe('What went wrong, for people'),
      type: z.string().describe('The code name, e.g. invalid_request_error, unknown_cost, insufficient_credits'),
      code: z.number().int().describe('The HTTP status'),
      param: z.string().nullable().describe('The parameter at fault; null when none is'),
      required: z.number().optional().describe('402: credits the request needs'),
      available: z.number().optional().describe('402: credits available now'),
      status: z.string().optional().describe('409: the state of the generation'),
    }),
  })
  .meta({ id: 'Error' });

/**
 * One event of a Server-Sent Events answer, as a client parses it (OpenAPI 3.1 describes a stream's
 * media type with the schema of each of its events): its type, its id, its data (a JSON text).
 */
export const serverSentEvent = z
  .looseObject({
    event: z.string().optional().describe('The event type; `message` when absent'),
    id: z.string().optional().describe('The id to send back as Last-Event-ID'),
    data: z.string().optional().describe('A JSON text'),
    retry: z.number().int().optional().describe('The reconnection delay, in ms'),
  })
  .meta({ id: 'ServerSentEvent' });

export type ErrorStatus = 400 | 401 | 402 | 403 | 404 | 405 | 409 | 413 | 429 | 431 | 500 | 503;

const ERROR_MEANINGS: Record<ErrorStatus, string> = {
  400: 'Missing or malformed parameter (invalid_request_error), no price for the model (unknown_cost), or a prompt refused by the safety guard (content_policy_violation); nothing was held or run',
  401: 'Missing or invalid credentials',
  402: 'insufficient_credits: the quoted price exceeds the available balance; nothing ran',
  403: 'permission_error: the key lacks the scope or the model; csrf_error: a session’s call without its X-CSRF-Token, or from a page of another origin',
  404: 'not_found',
  405: 'The path exists but not with this method; see the Allow header',
  409: 'A conflict: an Idempotency-Key reused for another request (idempotency_conflict), a generation that has already finished (generation_finished), a remix, extension or edit of a video that has not succeeded (generation_not_succeeded) or a reply that is being streamed to its client (generation_streaming), a disabled webhook endpoint (endpoint_disabled), or a batch that has ended (batch_finished)',
  413: 'The request body is over the route’s size limit: refused by its size before it is read, whatever it holds',
  429: 'rate_limit_error: the key has used its plan’s requests of the last 60 s; see Retry-After',
  431: 'invalid_request_error: the request line and headers exceed 16 KiB; answered before any route, for every route',
  500: 'server_error: internal error; retry shortly',
  503: 'server_error: a dependency is unavailable; nothing was charged; retry after Retry-After',
};

/** What Fastify's router answers for a path parameter over its 100 characters, before the route runs. */
export const PATH_PARAM_TOO_LONG =
  'invalid_request_error: a path parameter is longer than 100 characters (no id is); answered before the route runs';

/** Response entries for the given error statuses, each with the error body. */
export function errorResponses<const S extends readonly ErrorStatus[]>(...statuses: S) {
  return Object.fromEntries(statuses.map((s) => [s, apiError.describe(ERROR_MEANINGS[s] ?? 'error')])) as {
    [K in S[number]]: typeof apiError;
  };
}

export const generationError = z
  .object({
    code: z.string().describe('e.g. provider_failed, provider_error, cancelled, timeout, not_started'),
    message: z.string(),
    retryable: z.boolean().describe('Whether the same request may succeed if sent again'),
  })
  .meta({ id: 'GenerationError' });

export const generationKind = z.enum(GENERATION_KINDS as ['image', 'video', 'chat', 'upscale']);
export const generationStatus = z.enum(GENERATION_STATUSES as ['queued', 'running', 'succeeded', 'failed']);

/** How far a generation is and when it should be done: on every door's record that may carry extra fields. */
export const liveFields = {
  progress: z
    .number()
    .int()
    .min(0)
    .max(100)
    .describe(
      '0–100: the provider’s own progress where it reports one, else estimated from elapsed time against the expected duration; never goes back; 100 only when succeeded',
    ),
  queuePosition: z
    .number()
    .int()
    .min(1)
    .nullable()
    .describe(
      'A queued video’s place in the account’s queue for one of its five video slots (1 = next); null otherwise',
    ),
  etaSeconds: z
    .number()
    .int()
    .min(1)
    .nullable()
    .describe(
      'Seconds until it is expected to finish, from the durations the service measured for this model and size (until enough: the catalogue’s default); null once finished',
    ),
  expectedAt: z.string().nullable().describe('ISO 8601 UTC: when it is expected to finish; null once finished'),
};

/** The live fields of a generation as JSON. */
export const liveFieldsOf = (g: GenerationView) => ({
  progress: g.progress,
  queuePosition: g.queuePosition,
  etaSeconds: g.etaSeconds,
  expectedAt: g.expectedAt?.toISOString() ?? null,
});

/**
 * What a generation was asked for, as priced and run (core/generation/params.ts, PublicParams):
 * the fields of its kind only. What the service keeps for itself is never part of it.
 */
export const publicParams = z
  .object({
    quality: z.string().optional().describe('Image: the quality (or the model default)'),
    aspect: z.string().optional().describe('Image, video: the aspect after snapping to what the model renders'),
    width: z
      .number()
      .int()
      .optional()
      .describe('Image: the size rendered; video: the preview file; upscale: the output size'),
    height: z.number().int().optional(),
    hd: z.literal(true).optional().describe('Image: group B quality "hd"'),
    seconds: z
      .number()
      .int()
      .optional()
      .describe(
        'Video: seconds after clamping to the model range (what is priced and run; an extension: the seconds it added)',
      ),
    resolution: z.enum(RESOLUTIONS).optional().describe('Video'),
    remixedFrom: z.string().optional().describe('Video: the generation it remixes'),
    extendedFrom: z.string().optional().describe('Video: the generation it continues (an extension)'),
    stitchedSeconds: z
      .number()
      .int()
      .optional()
      .describe('Video extension: the length of its file, the source’s seconds and the added ones'),
    editedFrom: z.string().optional().describe('Video: the generation it is an edited copy of'),
    outputFormat: z
      .enum(['png', 'jpeg', 'webp'])
      .optional()
      .describe('Image: the encoding asked for (PNG when absent)'),
    inputImages: z.number().int().optional().describe('Image edit: how many input images it took'),
    masked: z.literal(true).optional().describe('Image edit: a mask said where to edit'),
    imageUrl: z.string().optional().describe('Video reference frame, upscale input: the URL given'),
    inputWidth: z.number().int().optional().describe('The input image as fetched'),
    inputHeight: z.number().int().optional(),
    scale: z
      .union([z.literal(2), z.literal(4)])
      .optional()
      .describe('Upscale'),
    requestedModel: z.string().optional().describe('Chat: the model id sent ("auto" when none)'),
    promptTruncated: z.boolean().optional().describe('Chat: the conversation was cut to the model capacity'),
    maxTokens: z.number().int().optional().describe('Chat: the output cap'),
    outputTokens: z.number().int().optional().describe('Chat billed per token: the output tokens charged'),
  } satisfies Record<keyof PublicParams, z.ZodType>)
  .meta({ id: 'GenerationParams' });

/** A chat's tokens in detail, by OpenAI's rules: the input counts the cache, the output the reasoning. */
export const tokenUsage = z
  .object({
    inputTokens: z.int().describe('All input tokens, those read from or written to the prompt cache included'),
    cachedInputTokens: z.int().describe('Input read from the prompt cache'),
    cacheWriteTokens: z.int().describe('Input written to the prompt cache'),
    outputTokens: z.int().describe('All output tokens, reasoning included: what a per-token model charges for'),
    reasoningTokens: z.int().describe('Output tokens the model reasoned with'),
  })
  .meta({ id: 'TokenUsage' });

/** Group A's generation: the record plus what a history needs (quote, parameters, times). */
export const generation = z
  .object({
    id: z.string(),
    kind: generationKind,
    model: z.string(),
    status: generationStatus,
    customer: z
      .string()
      .nullable()
      .describe(
        'Your own id for the end user it was made for (customer, user, safety_identifier or X-Customer-Id); null when none was named',
      ),
    outputUrl: z.string().describe('Signed URL valid 24 h, made fresh on every read; empty until succeeded'),
    thumbnailUrl: z
      .string()
      .nullable()
      .describe(
        'Video: its first frame (JPEG), signed like outputUrl; set while it runs as soon as the provider has that frame (the streams send `event: preview` then), and once succeeded; null before, when failed, for other kinds, or when the video’s format gives no frames',
      ),
    spritesheetUrl: z
      .string()
      .nullable()
      .describe(
        'Video: frames spread over the clip in a grid (JPEG), signed like outputUrl; null until succeeded, for other kinds, or when the video’s format gives no frames',
      ),
    creditsCharged: z.number(),
    creditsQuoted: z.number().describe('The price quoted and held at submit (0 for a free chat reply)'),
    error: generationError.nullable(),
    text: z.string().nullable().describe('Chat only: the reply; null otherwise'),
    params: publicParams,
    createdAt: z.string().describe('ISO 8601 UTC'),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    ...liveFields,
    provider: z
      .string()
      .nullable()
      .describe(
        'The upstream that served it, as the operator names it (UPSTREAMS_JSON); null when the built-in simulator did, or until it succeeded',
      ),
    batchId: z.string().nullable().describe('The batch whose line it ran (POST /v1/batches); null otherwise'),
    usage: tokenUsage
      .nullable()
      .describe('A succeeded chat: its tokens as the model’s provider counted them; null otherwise'),
  })
  .meta({ id: 'Generation' });

/** A generation as group A shows it; MCP's tools and the dashboard show the same. */
export function generationOf(g: GenerationView): z.infer<typeof generation> {
  return {
    ...recordOf(g),
    customer: g.customer,
    thumbnailUrl: g.thumbnailUrl,
    spritesheetUrl: g.spritesheetUrl,
    creditsQuoted: g.creditsQuoted,
    text: g.text,
    params: g.params,
    createdAt: g.createdAt.toISOString(),
    startedAt: g.startedAt?.toISOString() ?? null,
    finishedAt: g.finishedAt?.toISOString() ?? null,
    ...liveFieldsOf(g),
    provider: g.servedBy,
    batchId: g.batchId,
    usage: g.usage,
  };
}

export const generationList = z
  .object({
    data: z.array(generation),
    next_cursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last page'),
  })
  .meta({ id: 'GenerationList' });

/** A page of the service's list as group A's GenerationList. */
export const generationListOf = (page: {
  data: GenerationView[];
  nextCursor: string | null;
}): z.infer<typeof generationList> => ({
  data: page.data.map(generationOf),
  next_cursor: page.nextCursor,
});

const trial = z.object({
  chatCap: z.number().int().describe('Free chat replies granted'),
  chatUsed: z.number().int(),
  chatLeft: z.number().int(),
});

export const credits = z
  .object({
    balance: z.number().describe('Credits that can be spent now: the ledger balance less active holds'),
    holdsActive: z.number().describe('Credits held by generations in flight'),
    trial,
  })
  .meta({ id: 'Credits' });

export const balance = z
  .object({
    balance: z.number().describe('Credits that can be spent now: the ledger balance less active holds'),
    holdsActive: z.number().describe('Credits held by generations in flight'),
    plan: z.enum(PLANS),
    trial,
  })
  .meta({ id: 'Balance' });

/** A priced request with nothing held (POST /api/v1/quote, the dashboard's playground). */
export const quote = z
  .object({
    kind: generationKind,
    model: z
      .string()
      .describe('The model that would run (canonical id; the free model while the chat allowance lasts)'),
    credits: z.number().describe('The price that submitting now would hold and charge'),
    free: z.boolean().describe('A chat reply the free allowance would cover'),
    params: publicParams.describe('What would run after pricing: clamped seconds, resolution, snapped aspect, size…'),
    balance: z.number().describe('Credits that can be spent now'),
    affordable: z.boolean().describe('Whether the balance covers the price now'),
  })
  .meta({ id: 'Quote' });

/** A model as GET /api/v1/models and MCP's list_models show it. */
export const modelEntry = z
  .object({
    id: z.string(),
    kind: generationKind,
    aliases: z.array(z.string()).describe('Other ids accepted by groups A and C'),
    openaiIds: z.array(z.string()).describe('Group B ids priced as this model (accepted by groups A and B)'),
    unit: z.enum(['image', 'second', 'reply', '1k_output_tokens']).describe('What one price unit buys'),
    price: z.number().nullable().describe('Credits per unit, when the price has one value'),
    prices: z
      .record(z.string(), z.number().nullable())
      .nullable()
      .describe('Credits per unit by resolution (video; null: not offered) or by factor (upscale)'),
    seconds: z.object({ min: z.number(), max: z.number(), default: z.number() }).nullable(),
    defaults: z.record(z.string(), z.union([z.string(), z.number()])),
    options: z.record(z.string(), z.array(z.union([z.string(), z.number()]))),
    batch: z
      .object({
        percent: z.number().describe('A batch line costs this percentage of the same request alone'),
        price: z.number().nullable(),
        prices: z.record(z.string(), z.number().nullable()).nullable(),
      })
      .nullable()
      .describe('Prices in a batch (POST /v1/batches), per unit as above; null where batches do not run the model'),
  })
  .meta({ id: 'Model' });

export const idParams = z.object({ id: z.string().describe('A generation id') });

/** GET /api/v1/usage and the dashboard's usage page. */
export const usageQuery = z.object({
  from: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('Start (inclusive), ISO 8601; default: 00:00 UTC 29 days before to'),
  to: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('End (exclusive), ISO 8601; default: now. At most 366 days after from'),
  group_by: z
    .enum(USAGE_GROUPS)
    .default('day')
    .describe(
      'day (UTC, every day of the range), model, key (none: the dashboard’s own), kind or customer (null: none named)',
    ),
  customer: customerId('customer').optional().describe('Only the generations made for this customer of yours'),
  format: z.enum(['json', 'csv']).optional().describe('csv: the same groups as CSV (or send Accept: text/csv)'),
});
const usageFigures = {
  creditsCharged: z.number(),
  generations: z.int(),
  succeeded: z.int(),
  failed: z.int(),
  outputTokens: z.int().describe('Chat output tokens charged for (reasoning included)'),
  inputTokens: z.int().describe('Chat input tokens, those read from or written to the prompt cache included'),
  cachedInputTokens: z.int().describe('Chat input read from the prompt cache'),
  cacheWriteTokens: z.int().describe('Chat input written to the prompt cache'),
  reasoningTokens: z.int().describe('Chat output tokens the model reasoned with'),
};
export const usageReport = z
  .object({
    from: z.string(),
    to: z.string(),
    group_by: z.enum(USAGE_GROUPS),
    data: z.array(
      z.object({
        group: z
          .string()
          .nullable()
          .describe('The day (YYYY-MM-DD), model, key id, kind or customer; null: generations made for no customer'),
        ...usageFigures,
      }),
    ),
    total: z.object(usageFigures),
  })
  .meta({ id: 'UsageReport' });
