import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError, markAfterAdmission, ProviderFailedError } from '../../core/errors';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { wholeReply } from '../../service/chat/whole-reply';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { messageObject } from '../shared/anthropic/message';
import { cancelAfterHeader, clientDeadlineMs, idempotencyKey, idempotencyOf, spendCapOption } from '../shared/fields';
import { clientGone } from '../shared/sse';
import { chatRequestOf, countTokens, countTokensBody, MESSAGE_FIELDS, messagesBody } from './body';
import { anthropicBatchRoutes, BATCH_CREATE_FIELDS } from './batches';
import { errorsAnthropic, installAnthropicErrors } from './errors';
import { message } from './message-schema';
import { anthropicModelRoutes } from './models';
import { anthropicHeadersOf, checkVersion, inAnthropicWords, keyOf, VERSIONS } from './protocol';
import { messageEvents } from './replies';

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
  batches: BatchService;
  publicBaseUrl?: string | undefined;
}

/** The fields each body of this door may have: another is refused by name, as Anthropic refuses it. */
const FIELDS: Record<string, readonly string[]> = {
  '/v1/messages': MESSAGE_FIELDS,
  '/v1/messages/count_tokens': MESSAGE_FIELDS,
  '/v1/messages/batches': BATCH_CREATE_FIELDS,
};

const ROUTE = 'POST /v1/messages';
const tags = ['Anthropic Messages API'];
const security = [{ apiKey: [] }];

const headers = z.looseObject({
  // Required, as Anthropic requires it: checkVersion answers its absence in Anthropic's error shape
  // before the schema is run, so the schema says so for the document.
  'anthropic-version': z
    .string()
    .describe(`${VERSIONS.first} to ${VERSIONS.last}; passed unchanged to an Anthropic upstream`),
  'anthropic-beta': z
    .string()
    .optional()
    .describe('Passed unchanged to an Anthropic upstream; other upstreams ignore it'),
  'idempotency-key': idempotencyKey,
  'cancel-after': cancelAfterHeader,
});

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
    const fields = request.method === 'POST' ? FIELDS[request.routeOptions.url ?? ''] : undefined;
    if (fields && typeof body === 'object' && body !== null && !Array.isArray(body)) {
      const unknown = Object.keys(body).find((k) => !fields.includes(k));
      if (unknown !== undefined) throw new InvalidRequestError(`${unknown}: Extra inputs are not permitted`, unknown);
    }
  });
  await app.register(anthropicModelRoutes);
  await app.register(anthropicBatchRoutes, { batches: deps.batches, publicBaseUrl: deps.publicBaseUrl });
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
      const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], undefined);
      const signal = clientGone(request, reply);
      const run = await inAnthropicWords(() =>
        deps.service.runChat(chatRequestOf(body, anthropicHeadersOf(request)), principal, {
          door: 'anthropic',
          idempotency: idempotencyOf(request, ROUTE, body),
          ...(deadlineMs === undefined ? {} : { deadlineMs }),
          ...spendCapOption(body.max_credits, 'max_credits'),
          log: request.log,
          signal,
          streamed: body.stream === true,
        }),
      );
      if (run.repeatOf?.status === 'failed') {
        const e = run.repeatOf.error;
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
