import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError, markAfterAdmission, ProviderFailedError, UnknownCostError } from '../../core/errors';
import type { AnthropicHeaders } from '../../core/generation/params';
import type { GenerationService } from '../../service/generation/service';
import { wholeReply } from '../../service/chat/whole-reply';
import { bearerToken, principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import { cancelAfterHeader, clientDeadlineMs, idempotencyKey, idempotencyOf, spendCapOption } from '../shared/fields';
import { clientGone } from '../shared/sse';
import {
  catalogueModelOf,
  countTokens,
  countTokensBody,
  MESSAGE_FIELDS,
  maxTokensFor,
  messagesBody,
  messagesOf,
  responseFormatOf,
  samplingOf,
  toolsOf,
} from './body';
import { errorsAnthropic, installAnthropicErrors } from './errors';
import { anthropicModelRoutes } from './models';
import { messageEvents, messageObject } from './replies';

/**
 * Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) and its model
 * list for Anthropic's clients (models.ts): the door
 * Claude Code, the Anthropic SDKs and the AI SDK's Anthropic provider speak. A message is a chat
 * the API runs itself (service/generation/kinds/streamed-chat.ts), on the same per-token billing, ledger, limits and
 * budgets as group B; this door only parses Anthropic's request, writes Anthropic's reply and
 * answers errors in Anthropic's shape.
 */

export interface AnthropicDeps extends AuthDeps {
  service: GenerationService;
}

/** The versions of Anthropic's API whose request and reply shapes this door speaks. */
const VERSIONS = { first: '2023-06-01', last: '2026-10-21' };
const ROUTE = 'POST /v1/messages';
const PARAMS: Record<string, string> = {
  maxTokens: 'max_tokens',
  responseFormat: 'output_config.format',
  kind: 'model',
};
const tags = ['Anthropic Messages API'];
const security = [{ apiKey: [] }];

/** The key as Anthropic's clients send it: `x-api-key`, or `Authorization: Bearer` (the current SDK's). */
const keyOf = (request: FastifyRequest): string | undefined => {
  const given = request.headers['x-api-key'];
  return typeof given === 'string' && given !== '' ? given : bearerToken(request);
};

/** `anthropic-version` is required, as Anthropic requires it, and must be one this door speaks. */
function checkVersion(request: FastifyRequest): void {
  const version = request.headers['anthropic-version'];
  if (typeof version !== 'string' || version === '')
    throw new InvalidRequestError('anthropic-version: header is required', 'anthropic-version');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version) || version < VERSIONS.first || version > VERSIONS.last)
    throw new InvalidRequestError(
      `anthropic-version: ${version} is not a version this service speaks (${VERSIONS.first} to ${VERSIONS.last}).`,
      'anthropic-version',
    );
}

/** The client's protocol headers as sent (checkVersion has already judged the version). */
function anthropicHeadersOf(request: FastifyRequest): AnthropicHeaders {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const beta = header('anthropic-beta');
  return { version: header('anthropic-version'), ...(beta === undefined ? {} : { beta }) };
}

/** Anthropic's names for the service's errors: an unknown model is a bad `model`, as Anthropic says it. */
const inAnthropicWords = <T>(work: () => Promise<T>): Promise<T> =>
  inDoorWords(PARAMS, work, (err) =>
    err instanceof UnknownCostError
      ? new InvalidRequestError(err.message.replace('No price is defined for', 'There is no'), 'model')
      : undefined,
  );

const headers = z.looseObject({
  'anthropic-version': z
    .string()
    .optional()
    .describe(`Required: ${VERSIONS.first} to ${VERSIONS.last}; passed unchanged to an Anthropic upstream`),
  'anthropic-beta': z
    .string()
    .optional()
    .describe('Passed unchanged to an Anthropic upstream; other upstreams ignore it'),
  'idempotency-key': idempotencyKey,
  'cancel-after': cancelAfterHeader,
});

const usage = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int().describe('What was charged for, at the model’s rate per 1,000'),
  cache_creation_input_tokens: z.number().int(),
  cache_read_input_tokens: z.number().int(),
  cache_creation: z.null(),
  inference_geo: z.null(),
  output_tokens_details: z.null(),
  server_tool_use: z.null(),
  service_tier: z.literal('standard'),
  speed: z.null(),
});
const message = z
  .object({
    id: z.string().describe('The generation id (also readable at /api/v1/generations/{id})'),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string().describe('The catalogue model that answered'),
    content: z.array(
      z.union([
        z.object({ type: z.literal('text'), text: z.string(), citations: z.null() }),
        z.object({
          type: z.literal('tool_use'),
          id: z.string(),
          name: z.string(),
          input: z.unknown(),
          caller: z.object({ type: z.literal('direct') }),
        }),
      ]),
    ),
    container: z.null(),
    diagnostics: z.null(),
    stop_details: z.null(),
    stop_reason: z.enum(['end_turn', 'max_tokens', 'tool_use']),
    stop_sequence: z.null(),
    usage,
  })
  .meta({ id: 'AnthropicMessage' });

export const anthropicRoutes: FastifyPluginAsyncZod<AnthropicDeps> = async (app, deps) => {
  installAnthropicErrors(app);
  app.addHook('onRequest', async (request, reply) => {
    // Anthropic's SDKs report this one in their errors.
    reply.header('request-id', request.id);
  });
  app.addHook('onRequest', requireApiKey(deps, 'authentication_error', keyOf));
  app.addHook('preValidation', async (request) => {
    checkVersion(request);
    const body = request.body;
    if (request.url.startsWith('/v1/messages') && typeof body === 'object' && body !== null && !Array.isArray(body)) {
      const unknown = Object.keys(body).find((k) => !(MESSAGE_FIELDS as readonly string[]).includes(k));
      if (unknown !== undefined) throw new InvalidRequestError(`${unknown}: Extra inputs are not permitted`, unknown);
    }
  });
  await app.register(anthropicModelRoutes);
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.post(
    '/v1/messages',
    {
      schema: {
        operationId: 'anthropicCreateMessage',
        tags,
        security,
        summary: 'A message (Anthropic’s Messages API), whole or streamed; billed per output token',
        description:
          'Takes the key as x-api-key or Authorization: Bearer, and anthropic-version from 2023-06-01 to 2026-10-21. Holds max_tokens (at most the ' +
          'model’s largest output) at the model’s rate per 1,000 output tokens, then charges the tokens produced (usage.output_tokens) and releases ' +
          'the rest. With stream: true the answer is Anthropic’s events: message_start, content_block_start/delta/stop per block, message_delta ' +
          'with the output usage, message_stop. Tools, tool_choice, tool results and structured output (output_config.format) are passed to the model.',
        body: messagesBody,
        headers,
        response: {
          200: {
            description: 'The message; with stream: true, Server-Sent Events',
            content: {
              'application/json': { schema: message },
              'text/event-stream': {
                schema: z.string().describe('event: <type> / data: <event JSON>, message_start first'),
              },
            },
          },
          ...errorsAnthropic(400, 401, 402, 403, 409, 413, 429, 500, 502, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const principal = principalOf(request);
      const model = catalogueModelOf(body.model);
      const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], undefined);
      const signal = clientGone(request, reply);
      const run = await inAnthropicWords(() =>
        deps.service.runChat(
          {
            kind: 'chat',
            model,
            messages: messagesOf(body),
            maxTokens: maxTokensFor(model, body.max_tokens),
            sampling: samplingOf(body),
            tools: toolsOf(body),
            responseFormat: responseFormatOf(body),
            anthropicHeaders: anthropicHeadersOf(request),
          },
          principal,
          {
            door: 'anthropic',
            idempotency: idempotencyOf(request, ROUTE, body),
            ...(deadlineMs === undefined ? {} : { deadlineMs }),
            ...spendCapOption(body.max_credits, 'max_credits'),
            log: request.log,
            signal,
            streamed: body.stream === true,
          },
        ),
      );
      if (run.replay?.status === 'failed') {
        const e = run.replay.error;
        throw markAfterAdmission(
          new ProviderFailedError(
            `The reply failed (${e?.code ?? 'failed'}): ${e?.message ?? ''} Nothing was charged.`,
          ),
        );
      }
      const meta = { id: run.id, model: run.model, promptTokens: run.promptTokens, requestId: request.id };
      const events = run.events[Symbol.asyncIterator]();
      // A failure before the first event is an ordinary error answer; after it, an event of the stream.
      const first = await inAnthropicWords(() => events.next()).catch(async (err: unknown) => {
        await run.settled();
        throw err;
      });
      if (body.stream) {
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('x-accel-buffering', 'no');
        return reply.send(
          Readable.from(messageEvents(first, events, meta), { objectMode: false }) as unknown as string,
        );
      }
      const whole = await inAnthropicWords(() => wholeReply(run, first, events));
      if (!whole) throw new InvalidRequestError('The reply ended early.');
      return messageObject(meta, whole);
    },
  );

  route.post(
    '/v1/messages/count_tokens',
    {
      schema: {
        operationId: 'anthropicCountTokens',
        tags,
        security,
        summary: 'The input tokens a message would count, as the service estimates them; nothing is held or charged',
        body: countTokensBody,
        headers,
        response: {
          200: z.object({ input_tokens: z.number().int() }).meta({ id: 'AnthropicTokenCount' }),
          ...errorsAnthropic(400, 401, 413, 429, 500, 503),
        },
      },
    },
    async (request) => ({ input_tokens: countTokens(request.body) }),
  );
};
