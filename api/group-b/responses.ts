import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ResponseRecord } from '../../core/generation/params';
import { z } from 'zod';
import { InvalidRequestError, markAfterAdmission } from '../../core/errors';
import { wholeReply } from '../../service/chat/whole-reply';
import type { StoredItem } from '../../service/chat/responses';
import type { ChatRunEvent } from '../../service/chat/reply-stream';
import { principalOf } from '../shared/auth';
import { clientGone } from '../shared/sse';
import { cancelAfterHeader, idempotencyKey } from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import { failedRunError } from '../shared/openai/failures';
import { partsOfView, responseEvents, responseObject } from '../shared/openai/response-shape';
import type { ResponseParts } from '../shared/openai/response-shape';
import {
  recordOf,
  RESPONSE_FIELDS,
  RESPONSE_PARAMS,
  responseCreateBody,
  responseRequestOf,
} from '../shared/openai/responses';
import { responseSchema } from '../shared/openai/response-schema';
import { inGroupBWords, UNSUPPORTED } from '../shared/openai/words';
import {
  errorsB,
  openaiPage,
  pageLimit,
  pageOrder,
  refuseUnknownFields,
  security,
  submitOptionsOf,
  tags,
} from './common';
import type { GroupBApp, GroupBDeps } from './common';

/**
 * Group B's Responses API (`POST /v1/responses`, `GET /v1/responses/{id}`, `POST
 * /v1/responses/{id}/cancel`), on the chat's per-token billing. A foreground response is a chat
 * the API runs itself (service/generation/kinds/streamed-chat.ts), streamed as OpenAI's typed events; a background one
 * is an ordinary chat generation run by its workflow's provider activity, polled and cancelled.
 * Function tools and structured output go to the model (a 400 naming them where its provider cannot
 * take them); images, files and built-in tools are a 400 naming the field. Items of stored responses
 * are referenced by id, listed (`input_items`) and deleted with their response.
 */

const idParams = z.object({ id: z.string().max(100) });

const inputItemsQuery = z.object({
  after: z.string().max(200).optional().describe('The last_id of the previous page'),
  limit: pageLimit(100, 20),
  order: pageOrder,
  include: z.never({ error: `include ${UNSUPPORTED}` }).optional(),
});

const itemStatus = z.literal('completed');
const listedItem = z.union([
  z.object({
    id: z.string(),
    type: z.literal('message'),
    status: itemStatus,
    role: z.enum(['system', 'user', 'assistant']),
    content: z.array(
      z.union([
        z.object({ type: z.literal('input_text'), text: z.string() }),
        z.object({ type: z.literal('output_text'), text: z.string(), annotations: z.array(z.never()) }),
      ]),
    ),
  }),
  z.object({
    id: z.string(),
    type: z.literal('function_call'),
    status: itemStatus,
    call_id: z.string(),
    name: z.string(),
    arguments: z.string(),
  }),
  z.object({
    id: z.string(),
    type: z.literal('function_call_output'),
    status: itemStatus,
    call_id: z.string(),
    output: z.string(),
  }),
]);
const inputItemList = openaiPage(listedItem, 'ResponseInputItemList');

/** A stored item as the Responses API lists it. */
function inputItemOf(item: StoredItem): z.infer<typeof listedItem> {
  const status = 'completed' as const;
  switch (item.type) {
    case 'function_call':
      return {
        id: item.id,
        type: 'function_call',
        status,
        call_id: item.call.id,
        name: item.call.name,
        arguments: item.call.arguments,
      };
    case 'function_call_output':
      return { id: item.id, type: 'function_call_output', status, call_id: item.callId, output: item.output };
    case 'message':
      return {
        id: item.id,
        type: 'message',
        status,
        role: item.role,
        content: [
          item.role === 'assistant'
            ? { type: 'output_text', text: item.content, annotations: [] }
            : { type: 'input_text', text: item.content },
        ],
      };
  }
}

type ResponseBody = z.infer<typeof responseCreateBody>;
type ChatRequest = Awaited<ReturnType<typeof responseRequestOf>>;
type ChatRun = Awaited<ReturnType<GroupBDeps['service']['runChat']>>;

export const groupBResponseRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  createResponseRoute(app, deps);
  storedResponseRoutes(app, deps);
  inputItemsRoute(app, deps);
};

/** A response: queued in the background, or run here and answered whole or as a stream. */
function createResponseRoute(app: GroupBApp, deps: GroupBDeps): void {
  const ROUTE = 'POST /v1/responses';
  app.post(
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
          'tokens it was sent. background: true answers queued at once. Function tools and structured output (text.format) are passed on to the model ' +
          '(a 400 naming the field where its provider cannot take them); images, files and built-in tools are refused (400 naming the field). ' +
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
      refuseUnpolledBackground(record, body);
      const principal = principalOf(request);
      const chat = await responseRequestOf(body, (input) => deps.service.responses.conversation(principal, input));
      const options = { ...submitOptionsOf(request, ROUTE, body), log: request.log };

      if (record.background) {
        // The workflow runs it through the provider activity, billed per token as group A's chats are.
        const { generation } = await inGroupBWords(
          () => deps.service.submit(chat, principal, { ...options, respondAsync: true }),
          RESPONSE_PARAMS,
        );
        const { tools, responseFormat } = chat;
        return responseObject(
          partsOfView({ ...generation, record, sampling: chat.sampling ?? {}, tools, toolCalls: [], responseFormat }),
        );
      }

      const signal = clientGone(request, reply);
      const run = await inGroupBWords(
        () => deps.service.runChat(chat, principal, { ...options, signal, streamed: body.stream === true }),
        RESPONSE_PARAMS,
      );
      if (run.repeatOf?.status === 'failed') {
        // A repeat of a request that failed answers the same failure (nothing was charged either time).
        throw markAfterAdmission(failedRunError('response', run.repeatOf.error));
      }
      const start = startingParts(run, record, body, chat);
      const events = run.events[Symbol.asyncIterator]();
      // The first event (or a failure before it) decides the status: errors before any token are
      // ordinary error answers; after it they travel inside the stream.
      const first = await inGroupBWords(() => events.next(), RESPONSE_PARAMS).catch(async (err: unknown) => {
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
      return wholeResponse(run, first, events, start);
    },
  );
}

/** A background response is polled, so it cannot be a stream and must be stored. */
function refuseUnpolledBackground(record: ResponseRecord, body: ResponseBody): void {
  if (record.background && body.stream)
    throw new InvalidRequestError(
      `stream: a background response ${UNSUPPORTED} as a stream; poll GET /v1/responses/{id}.`,
      'stream',
    );
  if (record.background && !record.store)
    throw new InvalidRequestError('store: a background response must be stored (store: true) to be polled.', 'store');
}

/** A response run here as it begins: in progress, with the request's settings and nothing produced yet. */
function startingParts(run: ChatRun, record: ResponseRecord, body: ResponseBody, chat: ChatRequest): ResponseParts {
  return {
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
    tools: chat.tools ?? null,
    format: chat.responseFormat ?? null,
    usage: null,
    error: null,
    completedAt: null,
  };
}

/** A response run here, answered whole once the reply has ended. */
async function wholeResponse(
  run: ChatRun,
  first: IteratorResult<ChatRunEvent>,
  events: AsyncIterator<ChatRunEvent>,
  start: ResponseParts,
) {
  const whole = await inGroupBWords(() => wholeReply(run, first, events), RESPONSE_PARAMS);
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
}

/** A stored response: read, cancelled (in the background), deleted. */
function storedResponseRoutes(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
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

  app.post(
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

  app.delete(
    '/v1/responses/:id',
    {
      schema: {
        operationId: 'openaiDeleteResponse',
        tags,
        security,
        summary: 'Deletes a stored response: it is no longer readable, continued or referenced',
        description:
          'The generation stays in the account’s history (GET /api/v1/generations) with its charge: deleting a response removes it from the Responses API only. ' +
          'Another account’s id, or one already deleted, is 404.',
        params: idParams,
        response: {
          200: z
            .object({ id: z.string(), object: z.literal('response'), deleted: z.literal(true) })
            .meta({ id: 'ResponseDeleted' }),
          ...errorsB(400, 401, 404, 429, 500, 503),
        },
      },
    },
    async (request) => {
      const { id } = await deps.service.responses.delete(principalOf(request), request.params.id);
      return { id, object: 'response' as const, deleted: true as const };
    },
  );
}

/** The items a stored response was given, a page at a time. */
function inputItemsRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
    '/v1/responses/:id/input_items',
    {
      schema: {
        operationId: 'openaiListResponseInputItems',
        tags,
        security,
        summary: 'The items a stored response was given (client.responses.inputItems.list)',
        description:
          'This response’s own input (not that of a response it continued), each item with an id an item_reference may name. ' +
          'Pages follow `after` = the previous page’s last_id.',
        params: idParams,
        querystring: inputItemsQuery,
        response: { 200: inputItemList, ...errorsB(400, 401, 404, 429, 500, 503) },
      },
    },
    async (request) => {
      const q = request.query;
      const all = (await deps.service.responses.inputItems(principalOf(request), request.params.id)).map(inputItemOf);
      const ordered = q.order === 'asc' ? all : [...all].reverse();
      const from = q.after === undefined ? 0 : ordered.findIndex((i) => i.id === q.after) + 1;
      if (from === 0 && q.after !== undefined)
        throw new InvalidRequestError(`after: '${q.after}' is not an item of this response.`, 'after');
      const data = ordered.slice(from, from + q.limit);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: from + q.limit < ordered.length,
      };
    },
  );
}
