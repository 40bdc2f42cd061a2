import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DomainError, InvalidRequestError, markAfterAdmission } from '../../core/errors';
import { choicesTokenUsage } from '../../core/providers/token-usage';
import type { TokenUsage } from '../../core/vocabulary';
import { firstsOf, interleaved } from '../../service/chat/choices';
import type { ChoiceEvent } from '../../service/chat/choices';
import type { ChatRun } from '../../service/generation/kinds/streamed-chat';
import { wholeReply } from '../../service/chat/whole-reply';
import type { WholeReply } from '../../service/chat/whole-reply';
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
  logprobsOf,
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

/**
 * Writes the runs of a request's choices as OpenAI's stream: each choice's role and deltas (with
 * their log probabilities when asked) and its finish as they come, then the usage of them all if
 * asked, then [DONE].
 */
async function* chatChunks(
  choices: AsyncGenerator<ChoiceEvent>,
  meta: { id: string; created: number; model: string; includeUsage: boolean; logprobs: boolean; count: number },
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
  /** The choices whose role has not gone out yet. */
  const roleless = new Set(Array.from({ length: meta.count }, (_, i) => i));
  const usages: TokenUsage[] = [];
  const noLogprobs = meta.logprobs ? { content: [], refusal: null } : null;
  try {
    for await (const { index, event } of choices) {
      const role = roleless.delete(index);
      if (event.type === 'delta') {
        yield chunk([
          {
            index,
            delta: role ? { role: 'assistant', content: event.text } : { content: event.text },
            logprobs: meta.logprobs ? logprobsOf(event.logprobs ?? []) : null,
            finish_reason: null,
          },
        ]);
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
            index,
            delta: { ...(role ? { role: 'assistant', content: null } : {}), tool_calls: [call] },
            logprobs: noLogprobs,
            finish_reason: null,
          },
        ]);
      } else {
        if (role)
          yield chunk([
            { index, delta: { role: 'assistant', content: '' }, logprobs: noLogprobs, finish_reason: null },
          ]);
        yield chunk([{ index, delta: {}, logprobs: noLogprobs, finish_reason: event.finishReason }]);
        usages.push(event.usage);
      }
    }
    if (meta.includeUsage && usages.length === meta.count)
      yield chunk([], { usage: usageOf(choicesTokenUsage(usages)) });
    yield 'data: [DONE]\n\n';
  } catch (err) {
    // Headers are gone: the error travels as an event, which the SDK raises as an APIError.
    const e = err instanceof DomainError ? err : undefined;
    yield sse(errorBody(e?.type ?? 'server_error', e?.status ?? 500, e?.message ?? 'Internal error.'));
  } finally {
    await choices.return(undefined);
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
      const count = body.n ?? 1;
      const runs = await inGroupBWords(() =>
        deps.service.runChatChoices(chatRequestOf(body), principalOf(request), {
          ...submitOptionsOf(request, 'POST /v1/chat/completions', body),
          signal,
          streamed: body.stream === true,
          count,
        }),
      );
      const [run] = runs as [ChatRun, ...ChatRun[]];
      const created = unixSeconds(run.createdAt);
      const failed = runs.find((r) => r.repeatOf?.status === 'failed');
      // A repeat of a request that failed answers the same failure (nothing was charged either time).
      if (failed) throw markAfterAdmission(failedRunError('reply', failed.repeatOf!.error));
      const events = runs.map((r) => r.events[Symbol.asyncIterator]());
      // The first events (or a failure before them) decide the status: errors before any token are
      // ordinary error answers; after it they travel inside the stream.
      const firsts = await firstsOf(runs, events, inGroupBWords);

      if (body.stream) {
        for (const r of runs) r.answered();
        const meta = {
          id: run.id,
          created,
          model: run.model,
          includeUsage: body.stream_options?.include_usage === true,
          logprobs: body.logprobs === true,
          count,
        };
        reply
          .header('content-type', 'text/event-stream; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('x-accel-buffering', 'no');
        return reply.send(
          Readable.from(chatChunks(interleaved(firsts, events), meta), { objectMode: false }) as unknown as string,
        );
      }

      const wholes = await inGroupBWords(() => Promise.all(runs.map((r, i) => wholeReply(r, firsts[i]!, events[i]!))));
      if (wholes.some((w) => w === undefined)) throw new InvalidRequestError('The reply ended early.');
      const choices = wholes as WholeReply[];
      return chatCompletionOf({
        id: run.id,
        created,
        model: run.model,
        choices: choices.map((w) => ({ ...w, logprobs: body.logprobs === true ? w.logprobs : null })),
        usage: choicesTokenUsage(choices.map((w) => w.usage)),
      });
    },
  );
};
