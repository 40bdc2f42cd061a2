import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainError, InvalidRequestError, markAfterAdmission } from '../../core/errors';
import type { ChatRunEvent } from '../../service/chat/reply-stream';
import { wholeReply } from '../../service/chat/whole-reply';
import { principalOf } from '../shared/auth';
import { clientGone } from '../shared/sse';
import { errorBody } from '../shared/errors';
import { cancelAfterHeader, idempotencyKey } from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import {
  CHAT_FIELDS,
  chatCompletion,
  chatCompletionBody,
  chatCompletionOf,
  chatRequestOf,
  usageOf,
} from '../shared/openai/chat';
import { failedRunError } from '../shared/openai/failures';
import { inGroupBWords, unixSeconds } from '../shared/openai/words';
import { errorsB, refuseUnknownFields, security, submitOptionsOf, tags } from './common';
import type { GroupBDeps } from './common';

/**
 * Group B's chat completions. Chat runs in this process and streams as the provider sends
 * (service/generation/kinds/streamed-chat.ts): deltas go out as OpenAI's chunks, and a client that disconnects is
 * charged the tokens it was sent.
 */

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

export const groupBChatRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
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
        deps.service.runChat(chatRequestOf(body), principalOf(request), {
          ...submitOptionsOf(request, 'POST /v1/chat/completions', body),
          signal,
          streamed: body.stream === true,
        }),
      );
      const created = unixSeconds(run.createdAt);
      if (run.replay?.status === 'failed') {
        // A repeat of a request that failed answers the same failure (nothing was charged either time).
        throw markAfterAdmission(failedRunError('reply', run.replay.error));
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
      return chatCompletionOf({ id: run.id, created, model: run.model, ...whole });
    },
  );
};
