import { z } from 'zod';
import { safeText } from '../../../core/text';
import type { ChatMessage, ChatSampling, ChatTools, ResponseFormat } from '../../../core/generation/params';
import type { TokenUsage, ToolCall } from '../../../core/vocabulary';
import { MAX_TOP_LOGPROBS } from '../../../core/providers/types';
import type { TokenLogprob } from '../../../core/providers/types';
import type { GenerationRequest } from '../../../service/generation/requests';
import { functionName, jsonSchemaName, modelId, spendCapField } from '../fields';
import { UNSUPPORTED } from './words';
import { openAiEndUser } from '../customers';

/**
 * OpenAI's chat completions: the request body as group B takes it, what it asks the service for,
 * and the whole reply as OpenAI shapes it. Group B's route and a batch's `/v1/chat/completions`
 * lines share them, so a line's result is what the route would have answered.
 */

const textPart = z.object({ type: z.literal('text'), text: safeText({ label: 'content' }) });
const toolCall = z.object({
  id: z.string().min(1).max(200),
  type: z.literal('function'),
  function: z.object({ name: functionName, arguments: safeText({ max: 100_000 }) }),
});
const chatMessage = z
  .object({
    role: z
      .enum(['system', 'developer', 'user', 'assistant', 'tool'])
      .describe('developer counts as system; tool answers a function call (upstream models only)'),
    content: z
      .union([safeText({ label: 'content' }), z.array(textPart).min(1)])
      .nullish()
      .describe(
        'Text, or an array of text parts (image parts are not supported); null on an assistant turn that called functions',
      ),
    name: safeText({ max: 64 }).optional(),
    tool_calls: z.array(toolCall).min(1).max(128).optional().describe('An assistant turn’s function calls'),
    tool_call_id: z.string().min(1).max(200).optional().describe('A tool turn: the call it answers'),
  })
  .superRefine((m, ctx) => {
    if (m.role === 'tool' && !m.tool_call_id)
      ctx.addIssue({
        code: 'custom',
        message: 'tool_call_id: a tool message names the call it answers',
        path: ['tool_call_id'],
      });
    if (m.tool_calls && m.role !== 'assistant')
      ctx.addIssue({
        code: 'custom',
        message: 'tool_calls: only assistant messages carry function calls',
        path: ['tool_calls'],
      });
    if (m.content == null && !m.tool_calls)
      ctx.addIssue({
        code: 'custom',
        message: 'content: required unless the assistant message has tool_calls',
        path: ['content'],
      });
  });
const functionTool = z.object({
  type: z.literal('function', { error: `tools: only function tools ${'are supported'}` }),
  function: z.object({
    name: functionName,
    description: safeText({ max: 10_000 }).optional(),
    parameters: z.record(z.string(), z.unknown()).optional().describe('JSON Schema of the arguments'),
    strict: z.boolean().nullish(),
  }),
});

const responseFormatField = z.discriminatedUnion(
  'type',
  [
    z.object({ type: z.literal('text') }),
    z.object({ type: z.literal('json_object') }),
    z.object({
      type: z.literal('json_schema'),
      json_schema: z.object({
        name: jsonSchemaName,
        description: safeText({ max: 10_000 }).optional(),
        schema: z.record(z.string(), z.unknown()).optional().describe('JSON Schema the reply validates against'),
        strict: z.boolean().nullish(),
      }),
    }),
  ],
  { error: 'response_format.type must be text, json_object or json_schema' },
);

export const CHAT_FIELDS = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'n',
  'stop',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'user',
  'safety_identifier',
  'response_format',
  'store',
  'metadata',
  'tools',
  'tool_choice',
  'functions',
  'function_call',
  'logprobs',
  'top_logprobs',
  'logit_bias',
  'parallel_tool_calls',
  'modalities',
  'audio',
  'reasoning_effort',
  'max_credits',
] as const;

const endUser = openAiEndUser();

/** The most choices (`n`) one request may ask for: each is a generation of its own. */
export const MAX_CHOICES = 8;

export const chatCompletionBody = z
  .object({
    model: modelId.describe('A group B chat id (GET /v1/models); auto lets the service choose'),
    messages: z.array(chatMessage).min(1).max(1000),
    stream: z.boolean().nullish().describe('Server-Sent Events of chat.completion.chunk, ending with data: [DONE]'),
    stream_options: z
      .object({ include_usage: z.boolean().optional() })
      .nullish()
      .describe('include_usage: a last chunk with the usage'),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .nullish()
      .describe('Longest reply in tokens; the hold covers it (default: the model’s cap)'),
    max_completion_tokens: z.number().int().min(1).nullish().describe('Same as max_tokens (preferred by newer SDKs)'),
    temperature: z.number().min(0).max(2).nullish().describe('0 to 2, default 1'),
    top_p: z.number().min(0).max(1).nullish(),
    n: z
      .number()
      .int()
      .min(1)
      .max(MAX_CHOICES)
      .nullish()
      .describe(
        `Choices, 1 to ${MAX_CHOICES}: each its own generation, held together (all or none) and charged the tokens it produced`,
      ),
    stop: z.union([safeText({ max: 200 }), z.array(safeText({ max: 200 })).max(4)]).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    seed: z.number().int().nullish(),
    max_credits: spendCapField('max_credits').nullable(),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    store: z.boolean().nullish().describe('Accepted and ignored'),
    metadata: z
      .record(safeText({ max: 64 }), safeText({ max: 512 }))
      .nullish()
      .describe('Accepted and ignored'),
    response_format: responseFormatField
      .nullish()
      .describe(
        'text (default), json_object, or json_schema { name, schema, strict }: passed to the model (the simulator answers JSON valid against the schema); a 400 naming response_format where the model’s provider cannot',
      ),
    tools: z
      .array(functionTool)
      .max(128)
      .optional()
      .describe(
        'Functions the model may call: passed on to the model (the simulator calls one deterministically); a 400 naming tools where the model’s provider cannot',
      ),
    tool_choice: z
      .union([
        z.enum(['none', 'auto', 'required']),
        z.object({ type: z.literal('function'), function: z.object({ name: functionName }) }),
      ])
      .optional(),
    parallel_tool_calls: z.boolean().nullish(),
    // Refused clearly rather than ignored: the client would rely on them.
    functions: z.never({ error: `functions ${UNSUPPORTED}` }).optional(),
    function_call: z.never({ error: `function_call ${UNSUPPORTED}` }).optional(),
    logprobs: z
      .boolean()
      .nullish()
      .describe(
        'Each output token’s log probability, from the model’s provider (a 400 naming logprobs where it gives none)',
      ),
    top_logprobs: z
      .number()
      .int()
      .min(0)
      .max(MAX_TOP_LOGPROBS)
      .nullish()
      .describe('With logprobs: the likeliest tokens at each place, 0 to 20'),
    logit_bias: z.never({ error: `logit_bias ${UNSUPPORTED}` }).optional(),
    modalities: z.array(z.literal('text', { error: `modalities: only text ${UNSUPPORTED}` })).nullish(),
    audio: z.never({ error: `audio ${UNSUPPORTED}` }).optional(),
    reasoning_effort: safeText({ max: 20 }).nullish().describe('Accepted and ignored'),
  })
  .superRefine((body, ctx) => {
    if (body.top_logprobs != null && body.logprobs !== true)
      ctx.addIssue({ code: 'custom', message: 'top_logprobs: needs logprobs: true', path: ['top_logprobs'] });
  })
  .meta({
    id: 'ChatCompletionRequest',
    examples: [
      {
        model: 'claude-haiku',
        messages: [{ role: 'user', content: 'Say hello' }],
        max_tokens: 64,
        stream: true,
        stream_options: { include_usage: true },
      },
    ],
  });

export type ChatBody = z.infer<typeof chatCompletionBody>;

const usage = z.object({
  prompt_tokens: z.number().int().describe('All input tokens, those read from the prompt cache included'),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().describe('Input read from the prompt cache') }),
  completion_tokens_details: z.object({
    reasoning_tokens: z.number().int().describe('Output tokens the model reasoned with: part of completion_tokens'),
  }),
});
const topLogprob = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.int()).nullable() });
const choiceLogprobs = z
  .object({
    content: z.array(topLogprob.extend({ top_logprobs: z.array(topLogprob) })).nullable(),
    refusal: z.null(),
  })
  .nullable()
  .describe('With logprobs: true, the reply’s tokens and their log probabilities; else null');

export const chatCompletion = z
  .object({
    id: z.string().describe('The generation id (also readable at /api/v1/generations/{id})'),
    object: z.literal('chat.completion'),
    created: z.number().int(),
    model: z.string().describe('The model that answered'),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({
          role: z.literal('assistant'),
          content: z.string().nullable(),
          refusal: z.null(),
          tool_calls: z.array(toolCall).optional(),
        }),
        finish_reason: z.enum(['stop', 'length', 'tool_calls']),
        logprobs: choiceLogprobs,
      }),
    ),
    usage: usage.describe('completion_tokens is what was charged for, at the model’s rate per 1,000'),
  })
  .meta({ id: 'ChatCompletion' });

function messagesOf(body: ChatBody): ChatMessage[] {
  return body.messages.map((m) => ({
    role: m.role === 'developer' ? 'system' : m.role,
    content: m.content == null ? '' : typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(''),
    ...(m.tool_calls
      ? { toolCalls: m.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) }
      : {}),
    ...(m.tool_call_id ? { toolCallId: m.tool_call_id } : {}),
  }));
}

function toolsOf(body: ChatBody): ChatTools | undefined {
  if (!body.tools?.length) return undefined;
  const choice = body.tool_choice;
  return {
    functions: body.tools.map((t) => ({
      name: t.function.name,
      description: t.function.description,
      parameters: t.function.parameters,
      strict: t.function.strict ?? undefined,
    })),
    choice: choice === undefined ? undefined : typeof choice === 'string' ? choice : { name: choice.function.name },
    parallel: body.parallel_tool_calls ?? undefined,
  };
}

function responseFormatOf(body: ChatBody): ResponseFormat | undefined {
  const format = body.response_format;
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const { name, description, schema, strict } = format.json_schema;
  return { type: 'json_schema', name, schema: schema ?? {}, description, strict: strict ?? undefined };
}

function samplingOf(body: ChatBody): ChatSampling {
  const s: ChatSampling = {};
  if (body.temperature != null) s.temperature = body.temperature;
  if (body.top_p != null) s.top_p = body.top_p;
  if (body.stop != null) s.stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (body.seed != null) s.seed = body.seed;
  if (body.presence_penalty != null) s.presence_penalty = body.presence_penalty;
  if (body.frequency_penalty != null) s.frequency_penalty = body.frequency_penalty;
  if (body.logprobs === true) {
    s.logprobs = true;
    s.top_logprobs = body.top_logprobs ?? 0;
  }
  return s;
}

/** A whole reply's message: its text, or its function calls (with text only if the model wrote some). */
export function messageOf(text: string, calls: ToolCall[]) {
  if (calls.length === 0) return { content: text };
  return {
    content: text === '' ? null : text,
    tool_calls: calls.map((c) => ({
      id: c.id,
      type: 'function' as const,
      function: { name: c.name, arguments: c.arguments },
    })),
  };
}

/** OpenAI's counts include the cached input in the input and the reasoning in the output, as ours do. */
export function usageOf(u: TokenUsage): z.infer<typeof usage> {
  return {
    prompt_tokens: u.inputTokens,
    completion_tokens: u.outputTokens,
    total_tokens: u.inputTokens + u.outputTokens,
    prompt_tokens_details: { cached_tokens: u.cachedInputTokens },
    completion_tokens_details: { reasoning_tokens: u.reasoningTokens },
  };
}

/** The service's request for a chat completion body (its spending cap and stream flag are the caller's). */
export function chatRequestOf(body: ChatBody): Extract<GenerationRequest, { kind: 'chat' }> {
  return {
    kind: 'chat',
    model: body.model,
    messages: messagesOf(body),
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    sampling: samplingOf(body),
    tools: toolsOf(body),
    responseFormat: responseFormatOf(body),
  };
}

/** One choice of a whole reply; `logprobs` only when the request asked for them. */
export interface WholeChoice {
  text: string;
  toolCalls: ToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  logprobs: TokenLogprob[] | null;
}

/** A reply's tokens with their log probabilities, as OpenAI shapes them (a choice's, or a chunk's). */
export function logprobsOf(logprobs: readonly TokenLogprob[] | null | undefined): z.infer<typeof choiceLogprobs> {
  if (!logprobs) return null;
  const entry = (l: { token: string; logprob: number; bytes: number[] | null }) => ({
    token: l.token,
    logprob: l.logprob,
    bytes: l.bytes,
  });
  return { content: logprobs.map((l) => ({ ...entry(l), top_logprobs: l.top.map(entry) })), refusal: null };
}

/** A whole reply as the chat.completion object: its choices in order, the usage of them all. */
export function chatCompletionOf(r: {
  id: string;
  created: number;
  model: string;
  choices: readonly WholeChoice[];
  usage: TokenUsage;
}): z.infer<typeof chatCompletion> {
  return {
    id: r.id,
    object: 'chat.completion',
    created: r.created,
    model: r.model,
    choices: r.choices.map((c, index) => ({
      index,
      message: { role: 'assistant', ...messageOf(c.text, c.toolCalls), refusal: null },
      finish_reason: c.finishReason,
      logprobs: logprobsOf(c.logprobs),
    })),
    usage: usageOf(r.usage),
  };
}
