import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainError, InvalidRequestError, markAfterAdmission, ProviderFailedError } from '../../core/errors';
import { safeText } from '../../core/text';
import type { ChatRunEvent } from '../../service/chat/reply-stream';
import { wholeReply } from '../../service/chat/whole-reply';
import type { ChatTools } from '../../core/generation/params';
import type { ToolCall } from '../../core/vocabulary';
import type { ChatMessage, ChatSampling } from '../../core/generation/params';
import { principalOf } from '../shared/auth';
import { errorBody } from '../shared/errors';
import { cancelAfterHeader, functionName, idempotencyKey, spendCapField, modelId } from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import {
  clientGone,
  errorsB,
  inGroupBWords,
  refuseUnknownFields,
  security,
  submitOptionsOf,
  tags,
  unixSeconds,
  openAiEndUser,
} from './common';
import type { OpenAiDeps } from './common';

/**
 * Group B's chat completions. Chat runs in this process and streams as the provider sends
 * (service/chat/runs.ts): deltas go out as OpenAI's chunks, and a client that disconnects is
 * charged the tokens it was sent.
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

const CHAT_FIELDS = [
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
const UNSUPPORTED = 'is not supported by this service';
const endUser = openAiEndUser();

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
    n: z.literal(1, { error: 'n: only one choice per request (n = 1) is supported' }).nullish(),
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
    response_format: z
      .object({ type: z.literal('text', { error: `response_format: only {"type":"text"} ${UNSUPPORTED}` }) })
      .nullish(),
    tools: z
      .array(functionTool)
      .max(128)
      .optional()
      .describe(
        'Functions the model may call: passed on to models served by an OpenAI-compatible upstream; a 400 naming tools on the others',
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
    logprobs: z.literal(false, { error: `logprobs ${UNSUPPORTED}` }).nullish(),
    top_logprobs: z.never({ error: `top_logprobs ${UNSUPPORTED}` }).optional(),
    logit_bias: z.never({ error: `logit_bias ${UNSUPPORTED}` }).optional(),
    modalities: z.array(z.literal('text', { error: `modalities: only text ${UNSUPPORTED}` })).nullish(),
    audio: z.never({ error: `audio ${UNSUPPORTED}` }).optional(),
    reasoning_effort: safeText({ max: 20 }).nullish().describe('Accepted and ignored'),
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

type ChatBody = z.infer<typeof chatCompletionBody>;

const usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
const chatCompletion = z
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
        logprobs: z.null(),
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

function samplingOf(body: ChatBody): ChatSampling {
  const s: ChatSampling = {};
  if (body.temperature != null) s.temperature = body.temperature;
  if (body.top_p != null) s.top_p = body.top_p;
  if (body.stop != null) s.stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
  if (body.seed != null) s.seed = body.seed;
  if (body.presence_penalty != null) s.presence_penalty = body.presence_penalty;
  if (body.frequency_penalty != null) s.frequency_penalty = body.frequency_penalty;
  return s;
}

const sse = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;

/** Writes a run as OpenAI's stream: role and deltas, the finish, the usage if asked, [DONE]. */
async function* chatChunks(
  first: IteratorResult<ChatRunEvent>,
  rest: AsyncIterator<ChatRunEvent>,
  meta: { id: string; created: number; model: string; includeUsage: boolean },
): AsyncGenerator<string> {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    sse({
      id: meta.id,
      object: 'chat.completion.chunk',
      created: meta.created,
      model: meta.model,
      system_fingerprint: null,
      choices,
      ...(meta.includeUsage ? { usage: null } : {}),
      ...extra,
    });
  let role = true;
  let result = first;
  try {
    for (;;) {
      if (result.done) break;
      const event = result.value;
      if (event.type === 'delta') {
        yield chunk([
          {
            index: 0,
            delta: role ? { role: 'assistant', content: event.text } : { content: event.text },
            logprobs: null,
            finish_reason: null,
          },
        ]);
        role = false;
      } else if (event.type === 'tool_call') {
        // The first piece of a call names it; the rest carry its arguments.
        const call =
          event.id || event.name
            ? {
                index: event.index,
                id: event.id,
                type: 'function',
                function: { name: event.name, arguments: event.arguments },
              }
            : { index: event.index, function: { arguments: event.arguments } };
        yield chunk([
          {
            index: 0,
            delta: { ...(role ? { role: 'assistant', content: null } : {}), tool_calls: [call] },
            logprobs: null,
            finish_reason: null,
          },
        ]);
        role = false;
      } else {
        if (role)
          yield chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
        yield chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: event.finishReason }]);
        if (meta.includeUsage) yield chunk([], { usage: usageOf(event.usage) });
      }
      result = await rest.next();
    }
    yield 'data: [DONE]\n\n';
  } catch (err) {
    // Headers are gone: the error travels as an event, which the SDK raises as an APIError.
    const e = err instanceof DomainError ? err : undefined;
    yield sse(errorBody(e?.type ?? 'server_error', e?.status ?? 500, e?.message ?? 'Internal error.'));
  } finally {
    await rest.return?.();
  }
}

/** A whole reply's message: its text, or its function calls (with text only if the model wrote some). */
function messageOf(text: string, calls: ToolCall[]) {
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

function usageOf(u: { promptTokens: number; completionTokens: number }) {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

export const openaiChatRoutes: FastifyPluginAsyncZod<OpenAiDeps> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.post(
    '/v1/chat/completions',
    {
      preValidation: refuseUnknownFields(CHAT_FIELDS),
      schema: {
        operationId: 'openaiChatCompletion',
        tags,
        security,
        summary: 'A chat reply, whole or streamed as Server-Sent Events; billed per output token',
        description:
          'Holds max_tokens (or the model’s cap) at the model’s rate per 1,000 output tokens, then charges the tokens produced and releases the rest. ' +
          'With stream: true the reply is a stream of chat.completion.chunk events ending with `data: [DONE]` (and a usage chunk first when ' +
          'stream_options.include_usage is set); a client that disconnects is charged the tokens it was sent. An Idempotency-Key makes retries safe.',
        body: chatCompletionBody,
        headers: z.looseObject({
          'idempotency-key': idempotencyKey,
          'cancel-after': cancelAfterHeader,
          ...customerHeaders,
        }),
        response: {
          200: {
            description: 'The reply; with stream: true, Server-Sent Events',
            content: {
              'application/json': { schema: chatCompletion },
              'text/event-stream': {
                schema: z.string().describe('data: <chat.completion.chunk JSON> events, then data: [DONE]'),
              },
            },
          },
          ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 502, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const signal = clientGone(request, reply);
      const run = await inGroupBWords(() =>
        deps.service.runChat(
          {
            kind: 'chat',
            model: body.model,
            messages: messagesOf(body),
            maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
            sampling: samplingOf(body),
            tools: toolsOf(body),
          },
          principalOf(request),
          { ...submitOptionsOf(request, 'POST /v1/chat/completions', body), signal, streamed: body.stream === true },
        ),
      );
      const created = unixSeconds(run.createdAt);
      if (run.replay?.status === 'failed') {
        // A repeat of a request that failed answers the same failure (nothing was charged either time).
        const e = run.replay.error;
        throw markAfterAdmission(
          new ProviderFailedError(
            `The reply failed (${e?.code ?? 'failed'}): ${e?.message ?? ''} Nothing was charged.`,
          ),
        );
      }
      const events = run.events[Symbol.asyncIterator]();
      // The first event (or a failure before it) decides the status: errors before any token are
      // ordinary error answers; after it they travel inside the stream.
      const first = await inGroupBWords(() => events.next()).catch(async (err: unknown) => {
        // Answered once the hold is back, so that the balance read next shows nothing taken.
        await run.settled();
        throw err;
      });

      if (body.stream) {
        const includeUsage = body.stream_options?.include_usage === true;
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('x-accel-buffering', 'no');
        return reply.send(
          Readable.from(chatChunks(first, events, { id: run.id, created, model: run.model, includeUsage }), {
            objectMode: false,
          }) as unknown as string,
        );
      }

      const whole = await inGroupBWords(() => wholeReply(run, first, events));
      if (!whole) throw new InvalidRequestError('The reply ended early.');
      return {
        id: run.id,
        object: 'chat.completion' as const,
        created,
        model: run.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant' as const, ...messageOf(whole.text, whole.toolCalls), refusal: null },
            finish_reason: whole.finishReason,
            logprobs: null,
          },
        ],
        usage: usageOf(whole.usage),
      };
    },
  );
};
