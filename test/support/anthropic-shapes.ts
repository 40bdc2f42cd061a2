import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';

/**
 * Anthropic's answers as strict zod schemas, written from the published types of
 * `@anthropic-ai/sdk` (resources/messages/messages.d.ts, resources/shared.d.ts,
 * resources/models.d.ts, resources/messages/batches.d.ts, core/pagination.d.ts), not from the door's code: every field the SDK
 * declares required is required here, and no other field is allowed. Where the SDK's union is
 * wider than anything this service can produce (content blocks of server tools, citations,
 * containers), the schema names only the members the service may send, so a member it starts
 * sending must be written here first. The `satisfies` lines below make the compiler hold each
 * schema to the SDK's type: a field the SDK requires cannot be left out, nor typed otherwise.
 */

const directCaller = z.object({ type: z.literal('direct') }).strict();
const serverToolCaller = z
  .object({ tool_id: z.string(), type: z.enum(['code_execution_20250825', 'code_execution_20260120']) })
  .strict();

export const textBlock = z
  .object({
    // The service never cites a source: of TextCitation's members, none can occur.
    citations: z.null(),
    text: z.string(),
    type: z.literal('text'),
  })
  .strict();

export const toolUseBlock = z
  .object({
    id: z.string(),
    caller: z.union([directCaller, serverToolCaller]),
    input: z.unknown(),
    name: z.string(),
    type: z.literal('tool_use'),
    toolset_name: z.string().nullable().optional(),
  })
  .strict();

const serverToolUsage = z
  .object({ web_fetch_requests: z.number().int(), web_search_requests: z.number().int() })
  .strict();
const outputTokensDetails = z.object({ thinking_tokens: z.number().int() }).strict();
const cacheCreation = z
  .object({ ephemeral_1h_input_tokens: z.number().int(), ephemeral_5m_input_tokens: z.number().int() })
  .strict();

export const usage = z
  .object({
    cache_creation: cacheCreation.nullable(),
    cache_creation_input_tokens: z.number().int().nullable(),
    cache_read_input_tokens: z.number().int().nullable(),
    inference_geo: z.string().nullable(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    output_tokens_details: outputTokensDetails.nullable(),
    server_tool_use: serverToolUsage.nullable(),
    service_tier: z.enum(['standard', 'priority', 'batch']).nullable(),
    speed: z.enum(['standard', 'fast']).nullable(),
  })
  .strict();

export const messageDeltaUsage = z
  .object({
    cache_creation_input_tokens: z.number().int().nullable(),
    cache_read_input_tokens: z.number().int().nullable(),
    input_tokens: z.number().int().nullable(),
    output_tokens: z.number().int(),
    output_tokens_details: outputTokensDetails.nullable(),
    server_tool_use: serverToolUsage.nullable(),
  })
  .strict();

const stopReason = z.enum([
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
]);
const refusalStopDetails = z
  .object({
    category: z.enum(['cyber', 'bio', 'frontier_llm', 'reasoning_extraction', 'general_harms']).nullable(),
    explanation: z.string().nullable(),
    type: z.literal('refusal'),
  })
  .strict();
const container = z
  .object({
    id: z.string(),
    expires_at: z.string(),
    skills: z
      .array(z.object({ skill_id: z.string(), type: z.enum(['anthropic', 'custom']), version: z.string() }).strict())
      .nullable(),
  })
  .strict();

export const contentBlock = z.discriminatedUnion('type', [textBlock, toolUseBlock]);

export const message = z
  .object({
    id: z.string(),
    container: container.nullable(),
    content: z.array(contentBlock),
    // The service sends no prompt-cache diagnostics: of Diagnostics, only its absence.
    diagnostics: z.null(),
    model: z.string(),
    role: z.literal('assistant'),
    stop_details: refusalStopDetails.nullable(),
    stop_reason: stopReason.nullable(),
    stop_sequence: z.string().nullable(),
    type: z.literal('message'),
    usage,
  })
  .strict();

const textDelta = z.object({ text: z.string(), type: z.literal('text_delta') }).strict();
const inputJsonDelta = z.object({ partial_json: z.string(), type: z.literal('input_json_delta') }).strict();

export const streamEvent = z.discriminatedUnion('type', [
  z.object({ message, type: z.literal('message_start') }).strict(),
  z
    .object({
      delta: z
        .object({
          container: container.nullable(),
          stop_details: refusalStopDetails.nullable(),
          stop_reason: stopReason.nullable(),
          stop_sequence: z.string().nullable(),
        })
        .strict(),
      type: z.literal('message_delta'),
      usage: messageDeltaUsage,
    })
    .strict(),
  z.object({ type: z.literal('message_stop') }).strict(),
  z.object({ content_block: contentBlock, index: z.number().int(), type: z.literal('content_block_start') }).strict(),
  z
    .object({
      delta: z.discriminatedUnion('type', [textDelta, inputJsonDelta]),
      index: z.number().int(),
      type: z.literal('content_block_delta'),
    })
    .strict(),
  z.object({ index: z.number().int(), type: z.literal('content_block_stop') }).strict(),
]);

const errorObject = z
  .object({
    message: z.string(),
    type: z.enum([
      'invalid_request_error',
      'authentication_error',
      'billing_error',
      'permission_error',
      'not_found_error',
      'rate_limit_error',
      'timeout_error',
      'api_error',
      'overloaded_error',
    ]),
  })
  .strict();

export const errorResponse = z
  .object({ error: errorObject, request_id: z.string().nullable(), type: z.literal('error') })
  .strict();

export const modelInfo = z
  .object({
    id: z.string(),
    // The service describes no capabilities: of ModelCapabilities, only its absence.
    capabilities: z.null(),
    created_at: z.string().datetime(),
    deprecated_at: z.string().nullable(),
    display_name: z.string(),
    lifecycle: z.enum(['active', 'deprecated', 'retired']),
    line: z.enum(['haiku', 'sonnet', 'opus', 'fable', 'mythos']).nullable(),
    max_input_tokens: z.number().int().nullable(),
    max_tokens: z.number().int().nullable(),
    retires_at: z.string().nullable(),
    type: z.literal('model'),
  })
  .strict();

export const modelPage = z
  .object({
    data: z.array(modelInfo),
    has_more: z.boolean(),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
  })
  .strict();

const rfc3339 = z.string().datetime({ offset: true });

export const messageBatch = z
  .object({
    id: z.string(),
    archived_at: rfc3339.nullable(),
    cancel_initiated_at: rfc3339.nullable(),
    created_at: rfc3339,
    ended_at: rfc3339.nullable(),
    expires_at: rfc3339,
    processing_status: z.enum(['in_progress', 'canceling', 'ended']),
    request_counts: z
      .object({
        canceled: z.number().int(),
        errored: z.number().int(),
        expired: z.number().int(),
        processing: z.number().int(),
        succeeded: z.number().int(),
      })
      .strict(),
    results_url: z.string().url().nullable(),
    type: z.literal('message_batch'),
  })
  .strict();

export const messageBatchResult = z
  .object({
    custom_id: z.string(),
    result: z.discriminatedUnion('type', [
      z.object({ message, type: z.literal('succeeded') }).strict(),
      z.object({ error: errorResponse, type: z.literal('errored') }).strict(),
      z.object({ type: z.literal('canceled') }).strict(),
      z.object({ type: z.literal('expired') }).strict(),
    ]),
  })
  .strict();

/** Compile-time: each schema's output is a value of the SDK's own type. */
export type SchemasMatchTheSdk = [
  z.infer<typeof message> extends Anthropic.Message ? true : never,
  z.infer<typeof streamEvent> extends Anthropic.RawMessageStreamEvent ? true : never,
  z.infer<typeof errorResponse> extends Anthropic.ErrorResponse ? true : never,
  z.infer<typeof modelInfo> extends Anthropic.ModelInfo ? true : never,
  z.infer<typeof messageBatch> extends Anthropic.Messages.MessageBatch ? true : never,
  z.infer<typeof messageBatchResult> extends Anthropic.Messages.MessageBatchIndividualResponse ? true : never,
  z.infer<typeof modelPage> extends {
    data: Anthropic.ModelInfo[];
    has_more: boolean;
    first_id: string | null;
    last_id: string | null;
  }
    ? true
    : never,
];
export const SCHEMAS_MATCH_THE_SDK: SchemasMatchTheSdk = [true, true, true, true, true, true, true];

/**
 * The events of a streamed answer, each parsed by the schema: Anthropic's `ping` (the SDK's stream
 * reader drops it, so it has no type there) is allowed as `{type: "ping"}`, and an `error` event
 * is Anthropic's ErrorResponse.
 */
export function parseMessageStream(body: string): { event: string; data: unknown }[] {
  const events = body
    .split('\n\n')
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk) => {
      const event = /^event: (.+)$/m.exec(chunk)?.[1] ?? '';
      const data = JSON.parse(/^data: (.+)$/m.exec(chunk)?.[1] ?? 'null') as { type?: unknown };
      return { event, data };
    });
  for (const { event, data } of events) {
    if (data.type !== event) throw new Error(`event ${event} carries data of type ${String(data.type)}`);
    if (event === 'ping')
      z.object({ type: z.literal('ping') })
        .strict()
        .parse(data);
    else if (event === 'error') errorResponse.parse(data);
    else streamEvent.parse(data);
  }
  return events;
}
