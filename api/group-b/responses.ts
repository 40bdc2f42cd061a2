import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError, markAfterAdmission, ProviderFailedError } from '../../core/errors';
import { safeText } from '../../core/text';
import { wholeReply } from '../../service/chat/whole-reply';
import type { ChatTools } from '../../core/generation/params';
import type { ChatMessage, ChatSampling, ResponseRecord } from '../../core/generation/params';
import { principalOf } from '../shared/auth';
import { cancelAfterHeader, functionName, idempotencyKey, spendCapField, modelId } from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import { partsOfView, responseEvents, responseObject } from './response-shape';
import type { ResponseParts } from './response-shape';
import {
  clientGone,
  errorsB,
  GROUP_B_PARAMS,
  inGroupBWords,
  openAiEndUser,
  refuseUnknownFields,
  security,
  submitOptionsOf,
  tags,
} from './common';
import type { OpenAiDeps } from './common';

/**
 * Group B's Responses API (`POST /v1/responses`, `GET /v1/responses/{id}`, `POST
 * /v1/responses/{id}/cancel`), on the chat's per-token billing. A foreground response is a chat
 * the API runs itself (service/chat/runs.ts), streamed as OpenAI's typed events; a background one
 * is an ordinary chat generation run by its workflow's provider activity, polled and cancelled.
 * Function tools go to models served by an OpenAI-compatible upstream (a 400 naming them on the
 * simulator); images, files, built-in tools and structured output are a 400 naming the field.
 */

const UNSUPPORTED = 'is not supported by this service';
const PARAMS = { ...GROUP_B_PARAMS, maxTokens: 'max_output_tokens', messages: 'input' };

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
      error: `only message, function_call and function_call_output items are supported; item references and reasoning items ${UNSUPPORTED.replace('is', 'are')}`,
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
const inputItem = z.union([inputMessage, functionCallItem, functionCallOutputItem]);
const functionTool = z.object({
  type: z.literal('function', {
    error: `tools: only function tools are supported; built-in tools (web search, file search, computer use…) ${UNSUPPORTED.replace('is', 'are')}`,
  }),
  name: functionName,
  description: safeText({ max: 10_000 }).nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish().describe('JSON Schema of the arguments'),
  strict: z.boolean().nullish(),
});

const RESPONSE_FIELDS = [
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
        format: z
          .object({ type: z.literal('text', { error: `text.format: only {"type":"text"} ${UNSUPPORTED}` }) })
          .optional(),
        verbosity: z.enum(['low', 'medium', 'high']).nullish(),
      })
      .optional()
      .describe('Only plain text; verbosity is accepted and ignored'),
    tools: z
      .array(functionTool)
      .max(128)
      .optional()
      .describe(
        'Functions the model may call: passed on to models served by an OpenAI-compatible upstream; a 400 naming tools on the others',
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

type ResponseBody = z.infer<typeof responseCreateBody>;

const outputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.never()),
  logprobs: z.array(z.never()),
});
const outputMessage = z.object({
  id: z.string(),
  type: z.literal('message'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  role: z.literal('assistant'),
  content: z.array(outputText),
});
const outputFunctionCall = z.object({
  id: z.string(),
  type: z.literal('function_call'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
const responseSchema = z
  .object({
    id: z.string().describe('The generation id (also readable at /api/v1/generations/{id})'),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled']),
    background: z.boolean(),
    completed_at: z.number().int().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.object({ reason: z.literal('max_output_tokens') }).nullable(),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    metadata: z.record(z.string(), z.string()),
    model: z.string().describe('The model that answered'),
    output: z.array(z.union([outputMessage, outputFunctionCall])),
    output_text: z.string(),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable(),
    store: z.boolean(),
    temperature: z.number(),
    top_p: z.number(),
    presence_penalty: z.number(),
    frequency_penalty: z.number(),
    top_logprobs: z.number().int(),
    reasoning: z.null(),
    max_tool_calls: z.null(),
    service_tier: z.literal('default'),
    safety_identifier: z.null(),
    prompt_cache_key: z.null(),
    text: z.object({ format: z.object({ type: z.literal('text') }) }),
    tool_choice: z.union([
      z.enum(['none', 'auto', 'required']),
      z.object({ type: z.literal('function'), name: z.string() }),
    ]),
    tools: z.array(
      z.object({
        type: z.literal('function'),
        name: z.string(),
        description: z.string().nullable(),
        parameters: z.record(z.string(), z.unknown()).nullable(),
        strict: z.boolean().nullable(),
      }),
    ),
    truncation: z.literal('disabled'),
    usage: z
      .object({
        input_tokens: z.number().int(),
        input_tokens_details: z.object({ cached_tokens: z.number().int() }),
        output_tokens: z.number().int().describe('What was charged for, at the model’s rate per 1,000'),
        output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
        total_tokens: z.number().int(),
      })
      .nullable(),
  })
  .meta({ id: 'Response' });

const idParams = z.object({ id: z.string().max(100) });

const textOf = (content: string | { text: string }[]): string =>
  typeof content === 'string' ? content : content.map((p) => p.text).join('');

/**
 * The conversation as chat turns: a function call joins the assistant turn just before it (or
 * starts one), as chat completions carry calls; a function's output is a tool turn.
 */
function messagesOf(body: ResponseBody): ChatMessage[] {
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  const messages: ChatMessage[] = [];
  for (const item of body.input) {
    if (item.type === 'function_call') {
      const call = { id: item.call_id, name: item.name, arguments: item.arguments };
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), call];
      else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', toolCallId: item.call_id, content: textOf(item.output) });
    } else {
      messages.push({ role: item.role === 'developer' ? 'system' : item.role, content: textOf(item.content) });
    }
  }
  return messages;
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

function recordOf(body: ResponseBody): ResponseRecord {
  return {
    store: body.store ?? true,
    background: body.background ?? false,
    ...(body.instructions ? { instructions: body.instructions } : {}),
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(body.previous_response_id ? { previousResponseId: body.previous_response_id } : {}),
  };
}

export const openaiResponseRoutes: FastifyPluginAsyncZod<OpenAiDeps> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();
  const ROUTE = 'POST /v1/responses';

  route.post(
    '/v1/responses',
    {
      preValidation: refuseUnknownFields(RESPONSE_FIELDS),
      schema: {
        operationId: 'openaiCreateResponse',
        tags,
        security,
        summary:
          'A model response (OpenAI’s Responses API), whole, streamed or in the background; billed per output token',
        description:
          'Holds max_output_tokens (or the model’s cap) at the model’s rate per 1,000 output tokens, then charges the tokens produced and releases the rest. ' +
          'With stream: true the answer is OpenAI’s typed Server-Sent Events (response.created, response.in_progress, response.output_item.added, ' +
          'response.content_part.added, response.output_text.delta, response.output_text.done, response.content_part.done, response.output_item.done, ' +
          'response.completed or response.incomplete with the usage; response.failed then error on a failure); a client that disconnects is charged the ' +
          'tokens it was sent. background: true answers queued at once. Function tools are passed on to models served by an OpenAI-compatible upstream ' +
          '(a 400 naming tools elsewhere); images, files, built-in tools and structured output are refused (400 naming the field). ' +
          'An Idempotency-Key makes retries safe.',
        body: responseCreateBody,
        headers: z.looseObject({
          'idempotency-key': idempotencyKey,
          'cancel-after': cancelAfterHeader,
          ...customerHeaders,
        }),
        response: {
          200: {
            description: 'The response; with stream: true, Server-Sent Events',
            content: {
              'application/json': { schema: responseSchema },
              'text/event-stream': {
                schema: z.string().describe('event: <type> / data: <event JSON> pairs, response.created first'),
              },
            },
          },
          ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 502, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const record = recordOf(body);
      if (record.background && body.stream)
        throw new InvalidRequestError(
          `stream: a background response ${UNSUPPORTED} as a stream; poll GET /v1/responses/{id}.`,
          'stream',
        );
      if (record.background && !record.store)
        throw new InvalidRequestError(
          'store: a background response must be stored (store: true) to be polled.',
          'store',
        );
      const principal = principalOf(request);
      const messages = await deps.service.responses.conversation(principal, {
        instructions: body.instructions ?? undefined,
        previousResponseId: record.previousResponseId,
        messages: messagesOf(body),
      });
      const tools = toolsOf(body);
      const chat = {
        kind: 'chat' as const,
        model: body.model,
        messages,
        maxTokens: body.max_output_tokens ?? undefined,
        sampling: samplingOf(body),
        response: record,
        tools,
      };
      const options = { ...submitOptionsOf(request, ROUTE, body), log: request.log };

      if (record.background) {
        // The workflow runs it through the provider activity, billed per token as group A's chats are.
        const { generation } = await inGroupBWords(
          () => deps.service.submit(chat, principal, { ...options, respondAsync: true }),
          PARAMS,
        );
        return responseObject(
          partsOfView({ ...generation, record, sampling: chat.sampling ?? {}, tools, toolCalls: [] }),
        );
      }

      const signal = clientGone(request, reply);
      const run = await inGroupBWords(
        () => deps.service.runChat(chat, principal, { ...options, signal, streamed: body.stream === true }),
        PARAMS,
      );
      if (run.replay?.status === 'failed') {
        // A repeat of a request that failed answers the same failure (nothing was charged either time).
        const e = run.replay.error;
        throw markAfterAdmission(
          new ProviderFailedError(
            `The response failed (${e?.code ?? 'failed'}): ${e?.message ?? ''} Nothing was charged.`,
          ),
        );
      }
      const start: ResponseParts = {
        id: run.id,
        createdAt: run.createdAt,
        model: run.model,
        status: 'in_progress',
        record,
        maxOutputTokens: run.maxTokens,
        temperature: body.temperature ?? 1,
        topP: body.top_p ?? 1,
        text: null,
        toolCalls: [],
        tools: tools ?? null,
        usage: null,
        error: null,
        completedAt: null,
      };
      const events = run.events[Symbol.asyncIterator]();
      // The first event (or a failure before it) decides the status: errors before any token are
      // ordinary error answers; after it they travel inside the stream.
      const first = await inGroupBWords(() => events.next(), PARAMS).catch(async (err: unknown) => {
        await run.settled();
        throw err;
      });

      if (body.stream) {
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('x-accel-buffering', 'no');
        return reply.send(
          Readable.from(responseEvents(first, events, start), { objectMode: false }) as unknown as string,
        );
      }

      const whole = await inGroupBWords(() => wholeReply(run, first, events), PARAMS);
      if (!whole) throw new InvalidRequestError('The response ended early.');
      const status = whole.finishReason === 'length' ? 'incomplete' : 'completed';
      return responseObject({
        ...start,
        status,
        text: whole.text,
        toolCalls: whole.toolCalls,
        usage: whole.usage,
        completedAt: new Date(),
      });
    },
  );

  route.get(
    '/v1/responses/:id',
    {
      schema: {
        operationId: 'openaiRetrieveResponse',
        tags,
        security,
        summary: 'A stored response: queued, in_progress, completed, incomplete, failed or cancelled',
        description:
          'Any stored response of the account (store: true), whichever way it ran; another account’s id, or one made with store: false, is 404.',
        params: idParams,
        querystring: z.object({
          stream: z
            .enum(['false'], { error: `stream: replaying a stored response’s events ${UNSUPPORTED}` })
            .optional(),
          include: z.never({ error: `include ${UNSUPPORTED}` }).optional(),
        }),
        response: { 200: responseSchema, ...errorsB(400, 401, 404, 429, 500, 503) },
      },
    },
    async (request) =>
      responseObject(partsOfView(await deps.service.responses.get(principalOf(request), request.params.id))),
  );

  route.post(
    '/v1/responses/:id/cancel',
    {
      schema: {
        operationId: 'openaiCancelResponse',
        tags,
        security,
        summary: 'Stops a background response; its hold is released and nothing is charged',
        description:
          'Only responses created with background: true can be cancelled (400 otherwise; a streamed response is stopped by closing its connection). ' +
          'Cancelling a cancelled response answers it again; one that has already completed or failed is 409 generation_finished.',
        params: idParams,
        response: { 200: responseSchema, ...errorsB(400, 401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) =>
      responseObject(partsOfView(await deps.service.responses.cancel(principalOf(request), request.params.id))),
  );
};
