import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { batch, batchList, batchOf, sendBatchFile } from '../shared/batches';
import { openEventStream } from '../shared/sse';
import { errorResponses, idParams } from '../shared/schemas';
import { BATCH_ID_PATTERN } from '../../core/ids';
import { decodeCursor, encodeCursor } from '../../core/cursor';

const tags = ['Dashboard'];
const security = [{ session: [] }];
const sessionErrors = [401, 429, 500, 503] as const;
const jsonl = {
  description: 'JSONL: one line per request, as group B’s output and error files',
  content: { 'application/jsonl': { schema: z.string().describe('JSONL') } },
};

/**
 * The dashboard's batches (mounted inside its session scope): the list with progress and credits,
 * one batch followed live, cancel, and the output and error files to download.
 */
export const dashboardBatchRoutes: FastifyPluginAsyncZod<{
  batches: BatchService;
  service: GenerationService;
}> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/dashboard/api/batches',
    {
      schema: {
        operationId: 'dashboardBatches',
        tags,
        security,
        summary: 'The account’s batches, newest first, with their counts and credits',
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(100).default(20),
          cursor: z.string().max(400).optional(),
        }),
        response: { 200: batchList, ...errorResponses(400, ...sessionErrors) },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      const page = await deps.batches.list(principalOf(request), {
        limit,
        after: cursor === undefined ? undefined : decodeCursor(cursor, BATCH_ID_PATTERN),
      });
      const last = page.data.at(-1);
      return { data: page.data.map(batchOf), next_cursor: page.hasMore && last ? encodeCursor(last.id) : null };
    },
  );

  route.get(
    '/dashboard/api/batches/:id/events',
    { schema: { hide: true, params: idParams } },
    async (request, reply) => {
      const controller = new AbortController();
      const events = await deps.batches.watch(principalOf(request), request.params.id, { signal: controller.signal });
      const sse = openEventStream(request, reply);
      sse.signal.addEventListener('abort', () => controller.abort(), { once: true });
      void (async () => {
        try {
          for await (const e of events) sse.send(e.final ? 'done' : 'progress', batchOf(e.batch), e.id);
        } catch (err) {
          request.log.warn({ err }, 'batch events: the stream stopped');
        } finally {
          sse.end();
        }
      })();
    },
  );

  route.post(
    '/dashboard/api/batches/:id/cancel',
    {
      schema: {
        operationId: 'dashboardCancelBatch',
        tags,
        security,
        summary: 'Cancel a batch: what its lines have not used is released',
        params: idParams,
        response: { 200: batch, ...errorResponses(404, 409, 403, ...sessionErrors) },
      },
    },
    async (request) => batchOf(await deps.batches.cancel(principalOf(request), request.params.id)),
  );

  for (const role of ['output', 'errors'] as const) {
    route.get(
      `/dashboard/api/batches/:id/${role}`,
      {
        schema: {
          operationId: role === 'output' ? 'dashboardBatchOutput' : 'dashboardBatchErrors',
          tags,
          security,
          summary: role === 'output' ? 'Download the batch’s output file' : 'Download the batch’s error file',
          params: idParams,
          response: { 200: jsonl, ...errorResponses(404, ...sessionErrors) },
        },
      },
      async (request, reply) => sendBatchFile(reply, deps, principalOf(request), request.params.id, role),
    );
  }
};
