import { z } from 'zod';
import { safeText } from '../../../core/text';
import type {
  ChatMessage,
  ChatSampling,
  ChatTools,
  ResponseFormat,
  ResponseRecord,
} from '../../../core/generation/params';
import type { ResponseItem } from '../../../service/chat/responses';
import type { GenerationRequest } from '../../../service/generation/requests';
import { functionName, jsonSchemaName, modelId, spendCapField } from '../fields';
import { GROUP_B_PARAMS, UNSUPPORTED } from './words';
import { callbackFields } from './media';
import { openAiEndUser } from '../customers';

/**
 * OpenAI's Responses API request and Response object as group B takes and answers them; group B's
 * routes and a batch's `/v1/responses` lines share them (response-shape.ts builds the object).
 */

export const RESPONSE_PARAMS = {
  ...GROUP_B_PARAMS,
  maxTokens: 'max_output_tokens',
  messages: 'input',
  responseFormat: 'text.format',
};

const textPart = z.object({
  type: z.enum(['input_text', 'output_text'], {
    error: `only text parts (input_text, output_text) are supported; images, files and audio ${UNSUPPORTED.replace('is', 'are')}`,
  }),
  text: safeText({ label: 'text' }),
  annotations: z
    .array(z.unknown())
    .max(0, { error: `annotations ${UNSUPPORTED}` })
    .optional(),
  logprobs: z.array(z.unknown()).optional(),
});
const inputMessage = z.object({
  type: z
    .literal('message', {
      error: `only message, function_call, function_call_output, item_reference and reasoning items are supported`,
    })
    .optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']).describe('developer counts as system'),
  content: z
    .union([safeText({ label: 'content' }), z.array(textPart).min(1).max(100)])
    .describe('Text, or text parts (input_text; output_text for assistant turns)'),
  id: z.string().max(200).optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
  phase: z.string().max(40).nullish(),
});

const functionCallItem = z.object({
  type: z.literal('function_call'),
  call_id: z.string().min(1).max(200),
  name: functionName,
  arguments: safeText({ max: 100_000 }),
  id: z.string().max(200).optional(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).optional(),
});
const functionCallOutputItem = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string().min(1).max(200),
  output: z.union([safeText({ max: 1_000_000 }), z.array(textPart).min(1).max(100)]),
  id: z.string().max(200).nullish(),
  status: z.enum(['in_progress', 'completed', 'incomplete']).nullish(),
});
const itemReference = z.object({
  type: z.literal('item_reference'),
  id: z.string().min(1).max(200).describe('An output or input item of one of the account’s stored responses'),
});
// Reasoning items a client hands back (the AI SDK does) are accepted and not sent to the model.
const reasoningItem = z.looseObject({ type: z.literal('reasoning'), id: z.string().max(200).optional() });
const inputItem = z.union([inputMessage, functionCallItem, functionCallOutputItem, itemReference, reasoningItem]);
const functionTool = z.object({
  type: z.literal('function', {
    error: `tools: only function tools are supported; built-in tools (web search, file search, computer use…) ${UNSUPPORTED.replace('is', 'are')}`,
  }),
  name: functionName,
  description: safeText({ max: 10_000 }).nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish().describe('JSON Schema of the arguments'),
  strict: z.boolean().nullish(),
});

export const textFormat = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      name: jsonSchemaName,
      description: safeText({ max: 10_000 }).nullish(),
      schema: z.record(z.string(), z.unknown()).describe('JSON Schema the reply validates against'),
      strict: z.boolean().nullish(),
    }),
  ],
  { error: 'text.format.type must be text, json_object or json_schema' },
);

export const RESPONSE_FIELDS = [
  'model',
  'input',
  'instructions',
  'max_output_tokens',
  'temperature',
  'top_p',
  'metadata',
  'store',
  'stream',
  'stream_options',
  'background',
  'previous_response_id',
  'user',
  'safety_identifier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'service_tier',
  'reasoning',
  'parallel_tool_calls',
  'truncation',
  'include',
  'text',
  'tools',
  'tool_choice',
  'max_tool_calls',
  'top_logprobs',
  'conversation',
  'prompt',
  'context_management',
  'image',
  'moderation',
  'access_programs',
  'prompt_cache_options',
  'max_credits',
  'callback_url',
  'callback_events',
] as const;
const refused = (field: string, what = `${field} ${UNSUPPORTED}`) => z.never({ error: what }).optional();

export const responseCreateBody = z
  .object({
    model: modelId.describe('A group B chat id (GET /v1/models); auto lets the service choose'),
    input: z
      .union([safeText({ min: 1, label: 'input' }), z.array(inputItem).min(1).max(1000)])
      .describe('Text, or a list of message, function_call and function_call_output items'),
    instructions: safeText({ max: 100_000 })
      .nullish()
      .describe('A system message put first; not carried over by previous_response_id'),
    max_output_tokens: z
      .number()
      .int()
      .min(1)
      .nullish()
      .describe('Longest reply in tokens; the hold covers it (default: the model’s cap)'),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().min(0).max(1).nullish(),
    metadata: z
      .record(safeText({ max: 64 }), safeText({ max: 512 }))
      .refine((m) => Object.keys(m).length <= 16, 'metadata: at most 16 keys')
      .nullish()
      .describe('Kept with the response and answered back'),
    store: z
      .boolean()
      .nullish()
      .describe('Default true: readable with GET /v1/responses/{id} and continuable with previous_response_id'),
    stream: z.boolean().nullish().describe('Server-Sent Events: response.created … response.completed'),
    max_credits: spendCapField('max_credits').nullable(),
    ...callbackFields,
    stream_options: z
      .object({ include_obfuscation: z.boolean().optional() })
      .nullish()
      .describe('Accepted and ignored'),
    background: z
      .boolean()
      .nullish()
      .describe('Answer queued at once; poll GET /v1/responses/{id}, stop with POST /v1/responses/{id}/cancel'),
    previous_response_id: z.string().max(100).nullish().describe('Continue a stored response of the same account'),
    user: openAiEndUser().optional(),
    safety_identifier: openAiEndUser().nullish(),
    prompt_cache_key: safeText({ max: 256 }).nullish().describe('Accepted and ignored'),
    prompt_cache_retention: z.enum(['in_memory', '24h']).nullish().describe('Accepted and ignored'),
    service_tier: z.enum(['auto', 'default', 'flex', 'scale', 'priority']).nullish().describe('Accepted and ignored'),
    reasoning: z
      .object({ effort: z.string().max(20).nullish(), summary: z.string().max(20).nullish() })
      .nullish()
      .describe('Accepted and ignored'),
    parallel_tool_calls: z.boolean().nullish().describe('Passed on with tools'),
    truncation: z
      .enum(['auto', 'disabled'])
      .nullish()
      .describe('Long conversations are always cut from the oldest turns to fit the model'),
    include: z
      .array(z.never())
      .max(0, { error: `include ${UNSUPPORTED}` })
      .nullish(),
    text: z
      .object({
        format: textFormat.optional(),
        verbosity: z.enum(['low', 'medium', 'high']).nullish(),
      })
      .optional()
      .describe(
        'format: text (default), json_object, or json_schema { name, schema, strict } (structured output; a 400 naming text.format where the model’s provider cannot); verbosity is accepted and ignored',
      ),
    tools: z
      .array(functionTool)
      .max(128)
      .optional()
      .describe(
        'Functions the model may call: passed on to the model (the simulator calls one deterministically); a 400 naming tools where the model’s provider cannot',
      ),
    tool_choice: z
      .union([z.enum(['none', 'auto', 'required']), z.object({ type: z.literal('function'), name: functionName })], {
        error: `tool_choice: none, auto, required or a function; other choices ${UNSUPPORTED.replace('is', 'are')}`,
      })
      .optional(),
    max_tool_calls: z.number().int().nullish().describe('Accepted and ignored'),
    // Refused clearly rather than ignored: the client would rely on them.
    top_logprobs: z.literal(0, { error: `top_logprobs ${UNSUPPORTED}` }).nullish(),
    conversation: refused(
      'conversation',
      `conversation: conversation objects ${UNSUPPORTED.replace('is', 'are')}; use previous_response_id`,
    ),
    prompt: refused('prompt', `prompt: prompt templates ${UNSUPPORTED.replace('is', 'are')}`),
    context_management: refused('context_management'),
    image: refused('image'),
    moderation: refused('moderation'),
    access_programs: refused('access_programs'),
    prompt_cache_options: refused('prompt_cache_options'),
  })
  .meta({
    id: 'ResponseCreateRequest',
    examples: [
      { model: 'claude-haiku', instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 64, stream: true },
    ],
  });

export type ResponseBody = z.infer<typeof responseCreateBody>;

const textOf = (content: string | { text: string }[]): string =>
  typeof content === 'string' ? content : content.map((p) => p.text).join('');

/** The input as the service's items; reasoning items are left out (they are not sent to the model). */
function itemsOf(body: ResponseBody): ResponseItem[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  return body.input.flatMap((item): ResponseItem[] => {
    switch (item.type) {
      case 'function_call':
        return [{ type: 'function_call', call: { id: item.call_id, name: item.name, arguments: item.arguments } }];
      case 'function_call_output':
        return [{ type: 'function_call_output', callId: item.call_id, output: textOf(item.output) }];
      case 'item_reference':
        return [{ type: 'item_reference', id: item.id }];
      case 'reasoning':
        return [];
      default:
        return [
          { type: 'message', role: item.role === 'developer' ? 'system' : item.role, content: textOf(item.content) },
        ];
    }
  });
}

/** `text.format` in the service's terms; plain text is no format. */
export function responseFormatOf(body: ResponseBody): ResponseFormat | undefined {
  const format = body.text?.format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    name: format.name,
    schema: format.schema,
    description: format.description ?? undefined,
    strict: format.strict ?? undefined,
  };
}

function toolsOf(body: ResponseBody): ChatTools | undefined {
  if (!body.tools?.length) return undefined;
  const choice = body.tool_choice;
  return {
    functions: body.tools.map((t) => ({
      name: t.name,
      description: t.description ?? undefined,
      parameters: t.parameters ?? undefined,
      strict: t.strict ?? undefined,
    })),
    choice: choice === undefined ? undefined : typeof choice === 'string' ? choice : { name: choice.name },
    parallel: body.parallel_tool_calls ?? undefined,
  };
}

function samplingOf(body: ResponseBody): ChatSampling {
  const s: ChatSampling = {};
  if (body.temperature != null) s.temperature = body.temperature;
  if (body.top_p != null) s.top_p = body.top_p;
  return s;
}

export function recordOf(body: ResponseBody): ResponseRecord {
  return {
    store: body.store ?? true,
    background: body.background ?? false,
    ...(body.instructions ? { instructions: body.instructions } : {}),
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(body.previous_response_id ? { previousResponseId: body.previous_response_id } : {}),
  };
}

/**
 * Builds a Responses request's conversation (service/chat/responses.ts): instructions, a previous
 * response's turns, then this input with its item references resolved; how many turns are its own.
 */
export type ConversationOf = (input: {
  instructions: string | undefined;
  previousResponseId: string | undefined;
  items: ResponseItem[];
}) => Promise<{ messages: ChatMessage[]; inputCount: number }>;

/**
 * The service's chat request for a Responses body: the conversation is the service's to build
 * (instructions, a previous response's turns, then this input), through `conversation`.
 */
export async function responseRequestOf(
  body: ResponseBody,
  conversation: ConversationOf,
): Promise<Extract<GenerationRequest, { kind: 'chat' }>> {
  const record = recordOf(body);
  const { messages, inputCount } = await conversation({
    instructions: body.instructions ?? undefined,
    previousResponseId: record.previousResponseId,
    items: itemsOf(body),
  });
  return {
    kind: 'chat',
    model: body.model,
    messages,
    maxTokens: body.max_output_tokens ?? undefined,
    sampling: samplingOf(body),
    response: { ...record, inputCount },
    tools: toolsOf(body),
    responseFormat: responseFormatOf(body),
  };
}
