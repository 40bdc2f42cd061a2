import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BATCH_ID_PATTERN } from '../../core/ids';
import { BATCH_COMPLETION_WINDOW, OPENAI_BATCH_ENDPOINTS } from '../../core/vocabulary';
import { principalOf } from '../shared/auth';
import { callbackOption, spendCapField } from '../shared/fields';
import { callbackFields } from '../shared/openai/media';
import { lineParserFor } from '../shared/openai/batch-lines';
import { batchObject, batchObjectOf } from '../shared/openai/batches';
import { GROUP_B_PARAMS, inGroupBWords } from '../shared/openai/words';
import { RESPONSE_PARAMS } from '../shared/openai/responses';
import { idParams } from '../shared/schemas';
import { errorsB, openaiPage, pageLimit, refuseUnknownFields, security, tags } from './common';
import type { GroupBDeps } from './common';

/**
 * Group B's Batch API (`/v1/batches`), as the official SDK's `client.batches` calls it: a JSONL
 * file of requests to one endpoint, read and priced whole when the batch is made, held once at the
 * batch rate, run line by line and settled line by line (service/batches/).
 */

const ENDPOINTS = OPENAI_BATCH_ENDPOINTS;

export const batchCreateBody = z
  .object({
    input_file_id: z.string().max(100).describe('A file uploaded with purpose "batch"'),
    endpoint: z
      .enum(ENDPOINTS, { error: `endpoint must be one of ${ENDPOINTS.join(', ')}` })
      .describe('Every line of the file calls it'),
    completion_window: z
      .literal(BATCH_COMPLETION_WINDOW, { error: `completion_window must be "${BATCH_COMPLETION_WINDOW}"` })
      .describe('Lines not finished within it are stopped, their holds released; the batch expires'),
    metadata: z
      .record(z.string().max(64), z.string().max(512))
      .refine((m) => Object.keys(m).length <= 16, 'metadata: at most 16 keys')
      .nullish(),
    output_expires_after: z.unknown().optional().describe('Accepted and ignored: output files are kept'),
    max_credits: spendCapField('max_credits')
      .nullable()
      .describe('The most the whole batch may cost (at the batch rate); above it nothing is held (402)'),
    ...callbackFields,
  })
  .meta({
    id: 'BatchCreateRequest',
    examples: [{ input_file_id: 'file_…', endpoint: '/v1/chat/completions', completion_window: '24h' }],
  });

const batchList = openaiPage(batchObject, 'BatchList');

const listQuery = z.object({
  after: z
    .string()
    .regex(BATCH_ID_PATTERN, { error: 'after must be the id of a batch of a previous page (its last_id)' })
    .optional(),
  limit: pageLimit(100, 20),
});

export const groupBBatchRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.post(
    '/v1/batches',
    {
      preValidation: refuseUnknownFields(Object.keys(batchCreateBody.shape)),
      schema: {
        operationId: 'openaiCreateBatch',
        tags,
        security,
        summary: 'Make a batch from an uploaded JSONL file (client.batches.create)',
        description:
          'Every line is read and priced now, as its endpoint would, at the batch rate of its kind (GET /api/v1/models, `batch`). ' +
          'A line that is wrong (not JSON, a missing or repeated custom_id, another endpoint, too long, a body its endpoint would refuse) ' +
          'makes the batch `failed` with every problem by line number (the first line is 1), and nothing is held. ' +
          'Otherwise the whole price is held at once (402 when the account or the key’s budget cannot cover it: nothing is recorded) and the batch is `in_progress`; ' +
          'each line is charged what it costs when it succeeds and released when it fails.',
        body: batchCreateBody,
        response: { 200: batchObject, ...errorsB(400, 401, 402, 403, 404, 429, 500, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      const renames = body.endpoint === '/v1/responses' ? RESPONSE_PARAMS : GROUP_B_PARAMS;
      const batch = await inGroupBWords(() =>
        deps.batches.create(principal, {
          input: { format: 'openai', inputFileId: body.input_file_id },
          endpoint: body.endpoint,
          door: 'group-b',
          metadata: body.metadata ?? null,
          spendCap: body.max_credits == null ? undefined : { credits: body.max_credits, param: 'max_credits' },
          parse: lineParserFor(body.endpoint, (input) => deps.service.responses.conversation(principal, input)),
          inWords: (work) => inGroupBWords(work, renames),
          ...callbackOption(body.callback_url, body.callback_events, {
            param: 'callback_url',
            eventsParam: 'callback_events',
          }),
        }),
      );
      return batchObjectOf(await deps.batches.get(principal, batch.id, 'openai'));
    },
  );

  route.get(
    '/v1/batches/:id',
    {
      schema: {
        operationId: 'openaiRetrieveBatch',
        tags,
        security,
        summary: 'A batch: its status, request_counts, and its output and error files once it has ended',
        params: idParams,
        response: { 200: batchObject, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => batchObjectOf(await deps.batches.get(principalOf(request), request.params.id, 'openai')),
  );

  route.get(
    '/v1/batches',
    {
      schema: {
        operationId: 'openaiListBatches',
        tags,
        security,
        summary: 'The account’s batches, newest first (client.batches.list); pages follow `after`',
        querystring: listQuery,
        response: { 200: batchList, ...errorsB(400, 401, 429, 500, 503) },
      },
    },
    async (request) => {
      const page = await deps.batches.list(principalOf(request), { ...request.query, format: 'openai' });
      const data = page.data.map(batchObjectOf);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore,
      };
    },
  );

  route.post(
    '/v1/batches/:id/cancel',
    {
      schema: {
        operationId: 'openaiCancelBatch',
        tags,
        security,
        summary: 'Cancels a batch (client.batches.cancel): `cancelling`, then `cancelled` within seconds',
        description:
          'Lines not started never run and what they held is released; lines running are cancelled like any generation and released; lines that ' +
          'finished stay charged. Cancelling a cancelling or cancelled batch answers it again; one that has ended otherwise is 409 batch_finished.',
        params: idParams,
        response: { 200: batchObject, ...errorsB(401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) => batchObjectOf(await deps.batches.cancel(principalOf(request), request.params.id, 'openai')),
  );
};
