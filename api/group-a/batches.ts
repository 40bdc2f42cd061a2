import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { batch, batchFileResponse, batchList, batchOf, batchPage, followBatch, sendBatchFile } from '../shared/batches';
import { errorResponses, idParams } from '../shared/schemas';
import { security, tags } from './route-docs';

const lastEventId = z.looseObject({
  'last-event-id': z
    .string()
    .max(40, {
      error: 'Last-Event-ID must be an id this stream sent (<stage>.<lines ended>, such as 1.20)',
      abort: true,
    })
    .regex(/^(\d\.\d{1,15})?$/, {
      error: 'Last-Event-ID must be an id this stream sent (<stage>.<lines ended>, such as 1.20)',
    })
    .optional()
    .describe('The id of the last event received (EventSource sends it), to resume after it: <stage>.<lines ended>'),
});
const eventStream = {
  description: 'Server-Sent Events',
  content: { 'text/event-stream': { schema: z.string().describe('event: progress | done, data: the batch') } },
};

/**
 * Group A's view of batches (made through group B's `POST /v1/batches` or MCP's generate_batch):
 * list, read, follow live, cancel, and download the output and error files.
 */
export const groupABatchRoutes: FastifyPluginAsyncZod<
  AuthDeps & { service: GenerationService; batches: BatchService }
> = async (app, deps) => {
  app.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/api/v1/batches',
    {
      schema: {
        operationId: 'listBatches',
        tags,
        summary: 'The account’s batches, newest first, with their counts',
        security,
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
          cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
        }),
        response: { 200: batchList, ...errorResponses(400, 401, 429, 500, 503) },
      },
    },
    async (request) => batchPage(deps.batches, principalOf(request), request.query),
  );

  route.get(
    '/api/v1/batches/:id',
    {
      schema: {
        operationId: 'getBatch',
        tags,
        summary: 'One batch: its status, counts, credits held and charged, and its files once it has ended',
        security,
        params: idParams,
        response: { 200: batch, ...errorResponses(401, 404, 429, 500, 503) },
      },
    },
    async (request) => batchOf(await deps.batches.get(principalOf(request), request.params.id)),
  );

  route.post(
    '/api/v1/batches/:id/cancel',
    {
      schema: {
        operationId: 'cancelBatch',
        tags,
        summary: 'Cancels a batch: lines not finished are released, those finished stay charged',
        description:
          'The batch is `cancelling`, then `cancelled` within seconds; 409 batch_finished once it has ended otherwise.',
        security,
        params: idParams,
        response: { 200: batch, ...errorResponses(401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) => batchOf(await deps.batches.cancel(principalOf(request), request.params.id)),
  );

  route.get(
    '/api/v1/batches/:id/events',
    {
      schema: {
        operationId: 'followBatch',
        tags,
        summary: 'Follow a batch live (Server-Sent Events) until it ends',
        description:
          'An event `progress` whose data is the batch each time its status or counts change (at most twice a second), the final one `done`, after which the stream closes. ' +
          '`Last-Event-ID` resumes: an event is sent only when it is newer; an id the stream could not have sent is a 400.',
        security,
        params: idParams,
        headers: lastEventId,
        response: { 200: eventStream, ...errorResponses(400, 401, 404, 429, 500, 503) },
      },
    },
    async (request, reply) =>
      followBatch(request, reply, deps.batches, request.params.id, request.headers['last-event-id']),
  );

  for (const role of ['output', 'errors'] as const) {
    route.get(
      `/api/v1/batches/:id/${role}`,
      {
        schema: {
          operationId: role === 'output' ? 'downloadBatchOutput' : 'downloadBatchErrors',
          tags,
          summary:
            role === 'output'
              ? 'The batch’s output file: a line per request that succeeded'
              : 'The batch’s error file: a line per request that failed or never ran',
          security,
          params: idParams,
          response: { 200: batchFileResponse, ...errorResponses(401, 404, 429, 500, 503) },
        },
      },
      async (request, reply) => sendBatchFile(reply, deps, principalOf(request), request.params.id, role),
    );
  }
};
