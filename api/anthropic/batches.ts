import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError, markAfterAdmission, NotFoundError } from '../../core/errors';
import { BATCH_ID_PATTERN } from '../../core/ids';
import { ANTHROPIC_BATCH_ENDPOINT, isFinalBatch } from '../../core/vocabulary';
import type { BatchService, BatchView } from '../../service/batches/service';
import { messageBatchResults } from '../shared/anthropic/batch-results';
import { principalOf } from '../shared/auth';
import { callbackEventsField, callbackOption, callbackUrlField, idempotencyKey, idempotencyOf } from '../shared/fields';
import { idParams } from '../shared/schemas';
import { messageLineParser } from './batch-lines';
import { anthropicOrRouter400, errorsAnthropic } from './errors';
import { anthropicHeadersOf, inAnthropicWords, VERSIONS } from './protocol';

/**
 * Anthropic's Message Batches (`/v1/messages/batches`), as `client.messages.batches` of the official
 * SDKs calls them: inline requests, each a Messages API request, run by the same batch service,
 * workflow and ledger as OpenAI's Batch API (service/batches/): every request read and priced when
 * the batch is made (any problem is a 400, nothing held), the whole batch held once at the batch
 * rate, each request charged when it succeeds and released when it fails or is canceled. The
 * batch is group A's and the dashboard's too.
 */

export const BATCH_CREATE_FIELDS = ['requests', 'callback_url', 'callback_events'] as const;
const tags = ['Anthropic Message Batches'];
const security = [{ apiKey: [] }];
const rfc3339 = z.string().describe('RFC 3339');
const headers = z.looseObject({
  // Required, as on every route of this door (checkVersion answers its absence first).
  'anthropic-version': z
    .string()
    .describe(`${VERSIONS.first} to ${VERSIONS.last}; sent on with each request to an Anthropic upstream`),
  'anthropic-beta': z.string().optional().describe('Sent on with each request to an Anthropic upstream'),
});
const createHeaders = headers.extend({
  'idempotency-key': idempotencyKey.describe(
    'A repeat with the same key and body within 24 h answers the batch made first, holding nothing again; with another body, 409',
  ),
});
/** The answers of a route on one batch (its id in the path). */
const onOneBatch = <const S extends readonly number[]>(...statuses: S) => ({
  400: anthropicOrRouter400,
  ...errorsAnthropic(...statuses),
});

const createBody = z
  .object({
    requests: z
      .array(z.unknown())
      .describe(
        'Each { custom_id, params }: custom_id 1 to 64 letters, digits, hyphens or underscores, unique in the batch; params a Messages API body (not streamed)',
      ),
    // Not Anthropic's: a callback URL on the batch, as OpenRouter names one (the SDKs send it as an extra body field).
    callback_url: callbackUrlField('callback_url'),
    callback_events: callbackEventsField('callback_events'),
  })
  .meta({
    id: 'AnthropicMessageBatchCreateRequest',
    examples: [
      {
        requests: [
          {
            custom_id: 'first',
            params: { model: 'claude-haiku', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] },
          },
        ],
      },
    ],
  });

const messageBatch = z
  .object({
    id: z.string().describe('The batch id (batch_…), also group A’s'),
    type: z.literal('message_batch'),
    processing_status: z.enum(['in_progress', 'canceling', 'ended']),
    request_counts: z
      .object({
        processing: z.number().int(),
        succeeded: z.number().int(),
        errored: z.number().int(),
        canceled: z.number().int(),
        expired: z.number().int(),
      })
      .describe('Every request is processing until the whole batch has ended, as Anthropic counts them'),
    created_at: rfc3339,
    expires_at: rfc3339.describe('24 hours after creation: requests not run by then expire, their holds released'),
    ended_at: rfc3339.nullable(),
    cancel_initiated_at: rfc3339.nullable(),
    archived_at: z.null().describe('Results are kept: never archived'),
    results_url: z.string().nullable().describe('Once it has ended: its results, JSONL'),
  })
  .meta({ id: 'AnthropicMessageBatch' });

const batchPage = z
  .object({
    data: z.array(messageBatch),
    has_more: z.boolean(),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
  })
  .meta({ id: 'AnthropicMessageBatchList' });

const batchId = (name: string) =>
  z
    .string()
    .regex(BATCH_ID_PATTERN, { error: `${name} must be the id of a batch (batch_…)` })
    .optional();
const listQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1, { error: 'limit must be between 1 and 1000' })
    .max(1000, { error: 'limit must be between 1 and 1000' })
    .default(20),
  after_id: batchId('after_id').describe('The page of older batches after this one (a page’s last_id)'),
  before_id: batchId('before_id').describe('The page of newer batches before this one (a page’s first_id)'),
});

const iso = (d: Date | null): string | null => d?.toISOString() ?? null;

/** A batch as Anthropic's MessageBatch; `base` is the service's address, for its results_url. */
export function messageBatchOf(b: BatchView, base: string): z.infer<typeof messageBatch> {
  const ended = isFinalBatch(b.status);
  const { total, completed, failed } = b.requestCounts;
  const { cancelled, expired } = b.stopped;
  return {
    id: b.id,
    type: 'message_batch',
    processing_status: ended ? 'ended' : b.status === 'cancelling' ? 'canceling' : 'in_progress',
    request_counts: ended
      ? { processing: 0, succeeded: completed, errored: failed - cancelled - expired, canceled: cancelled, expired }
      : { processing: total, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    created_at: b.createdAt.toISOString(),
    expires_at: (b.expiresAt ?? b.createdAt).toISOString(),
    ended_at: iso(b.completedAt ?? b.cancelledAt ?? b.expiredAt ?? b.failedAt),
    cancel_initiated_at: iso(b.cancellingAt),
    archived_at: null,
    results_url: ended ? `${base}${ANTHROPIC_BATCH_ENDPOINT}/batches/${b.id}/results` : null,
  };
}

interface AnthropicBatchDeps {
  batches: BatchService;
  publicBaseUrl?: string | undefined;
}
type AnthropicBatchApp = Parameters<FastifyPluginAsyncZod<AnthropicBatchDeps>>[0];

/** The Message Batches API, in the document's order: create, read and list, cancel and delete, results. */
export const anthropicBatchRoutes: FastifyPluginAsyncZod<AnthropicBatchDeps> = async (app, deps) => {
  createBatchRoute(app, deps);
  readBatchRoutes(app, deps);
  endBatchRoutes(app, deps);
  batchResultsRoute(app, deps);
};

/** A batch as the request's caller sees it: its results_url on the service's address, or the request's own. */
function shown(deps: AnthropicBatchDeps, request: FastifyRequest, b: BatchView): z.infer<typeof messageBatch> {
  return messageBatchOf(b, deps.publicBaseUrl ?? `${request.protocol}://${request.host}`);
}

/** Making a batch: every request read and priced, the whole batch held once. */
function createBatchRoute(app: AnthropicBatchApp, deps: AnthropicBatchDeps): void {
  app.post(
    '/v1/messages/batches',
    {
      bodyLimit: deps.batches.files.limits.maxBytes,
      schema: {
        operationId: 'anthropicCreateMessageBatch',
        tags,
        security,
        summary:
          'A Message Batch (client.messages.batches.create): many messages, run in the background at the batch rate',
        description:
          'Every request is read and priced now, as POST /v1/messages would, at the batch rate (GET /api/v1/models, `batch`). A request that is wrong ' +
          '(a missing, malformed or repeated custom_id, params its endpoint would refuse, more requests than a batch may have) is a 400 naming it, ' +
          'and nothing is held. Otherwise the whole price is held at once (402 when the account or the key’s budget cannot cover it) and the batch ' +
          'is in_progress; each request is charged what it produced when it succeeds and released when it fails or is canceled. ' +
          'An Idempotency-Key makes retries safe.',
        body: createBody,
        headers: createHeaders,
        response: { 200: messageBatch, ...errorsAnthropic(400, 401, 402, 403, 409, 413, 429, 500, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const made = await inAnthropicWords(() =>
        deps.batches.create(principal, {
          input: { format: 'anthropic', requests: request.body.requests },
          endpoint: ANTHROPIC_BATCH_ENDPOINT,
          door: 'anthropic',
          metadata: null,
          parse: messageLineParser(anthropicHeadersOf(request)),
          inWords: inAnthropicWords,
          ...callbackOption(request.body.callback_url, request.body.callback_events, {
            param: 'callback_url',
            eventsParam: 'callback_events',
          }),
          idempotency: idempotencyOf(request, 'POST /v1/messages/batches', request.body),
        }),
      );
      // The batch is held: a failure from here on must not make the SDK send it again.
      const view = await deps.batches.get(principal, made.id, 'anthropic').catch((err: unknown) => {
        throw markAfterAdmission(err);
      });
      return shown(deps, request, view);
    },
  );
}

/** Reading one batch, and the account's batches a page at a time. */
function readBatchRoutes(app: AnthropicBatchApp, deps: AnthropicBatchDeps): void {
  app.get(
    '/v1/messages/batches/:id',
    {
      schema: {
        operationId: 'anthropicRetrieveMessageBatch',
        tags,
        security,
        summary: 'A Message Batch: its processing status, counts, and results_url once it has ended',
        params: idParams,
        headers,
        response: { 200: messageBatch, ...onOneBatch(401, 404, 429, 500, 503) },
      },
    },
    async (request) =>
      shown(deps, request, await deps.batches.get(principalOf(request), request.params.id, 'anthropic')),
  );

  app.get(
    '/v1/messages/batches',
    {
      schema: {
        operationId: 'anthropicListMessageBatches',
        tags,
        security,
        summary:
          'The account’s Message Batches, newest first (client.messages.batches.list): pages follow after_id or before_id',
        querystring: listQuery,
        headers,
        response: { 200: batchPage, ...errorsAnthropic(400, 401, 429, 500, 503) },
      },
    },
    async (request) => {
      const { limit, after_id: after, before_id: before } = request.query;
      if (after !== undefined && before !== undefined)
        throw new InvalidRequestError('after_id and before_id cannot both be given.', 'before_id');
      const page = await deps.batches.list(principalOf(request), { limit, after, before, format: 'anthropic' });
      const data = page.data.map((b) => shown(deps, request, b));
      return { data, has_more: page.hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    },
  );
}

/** Ending a batch: cancelling one that runs, deleting one that has ended. */
function endBatchRoutes(app: AnthropicBatchApp, deps: AnthropicBatchDeps): void {
  app.post(
    '/v1/messages/batches/:id/cancel',
    {
      schema: {
        operationId: 'anthropicCancelMessageBatch',
        tags,
        security,
        summary: 'Cancels a Message Batch (client.messages.batches.cancel): canceling, then ended within seconds',
        description:
          'Requests not started never run and what they held is released; requests running are stopped and released; both end `canceled`. Those ' +
          'that finished stay charged. Cancelling a canceling or canceled batch answers it again; one that ended otherwise is a 409.',
        params: idParams,
        headers,
        response: { 200: messageBatch, ...onOneBatch(401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) =>
      shown(deps, request, await deps.batches.cancel(principalOf(request), request.params.id, 'anthropic')),
  );

  app.delete(
    '/v1/messages/batches/:id',
    {
      schema: {
        operationId: 'anthropicDeleteMessageBatch',
        tags,
        security,
        summary:
          'Deletes a Message Batch that has ended (client.messages.batches.delete); one still processing is a 409',
        description:
          'The batch is gone for every door; its requests’ generations and the ledger’s entries stay in the account’s history.',
        params: idParams,
        headers,
        response: {
          200: z
            .object({ id: z.string(), type: z.literal('message_batch_deleted') })
            .meta({ id: 'AnthropicDeletedMessageBatch' }),
          ...onOneBatch(401, 404, 409, 429, 500, 503),
        },
      },
    },
    async (request) => {
      const { id } = await deps.batches.remove(principalOf(request), request.params.id, 'anthropic');
      return { id, type: 'message_batch_deleted' as const };
    },
  );
}

/** A batch's results once it has ended, as JSONL. */
function batchResultsRoute(app: AnthropicBatchApp, deps: AnthropicBatchDeps): void {
  app.get(
    '/v1/messages/batches/:id/results',
    {
      schema: {
        operationId: 'anthropicMessageBatchResults',
        tags,
        security,
        summary:
          'A Message Batch’s results (client.messages.batches.results): JSONL, a line per request, once it has ended',
        description:
          'Each line { custom_id, result }, in request order: succeeded (with the message), errored (with the error its request would have ' +
          'answered; nothing charged), canceled or expired (never run, or stopped while running; nothing charged).',
        params: idParams,
        headers,
        response: {
          200: {
            description: 'JSONL: a line { custom_id, result } per request',
            content: { 'application/jsonl': { schema: z.string().describe('JSONL') } },
          },
          ...onOneBatch(401, 404, 429, 500, 503),
        },
      },
    },
    async (request, reply) =>
      sendResults(reply, deps.batches, await deps.batches.own(principalOf(request), request.params.id, 'anthropic')),
  );
}

/** Every request's result, once the batch has ended; 404 while it runs. */
async function sendResults(
  reply: FastifyReply,
  batches: BatchService,
  row: Awaited<ReturnType<BatchService['own']>>,
): Promise<FastifyReply> {
  if (!isFinalBatch(row.status))
    throw new NotFoundError(`Batch '${row.id}' has no results yet: it is still processing.`, { param: 'id' });
  return reply
    .header('content-type', 'application/jsonl')
    .send(Readable.from(messageBatchResults(batches, row, 'all')));
}
