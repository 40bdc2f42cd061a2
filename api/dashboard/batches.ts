import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { batch, batchFileResponse, batchList, batchOf, batchPage, followBatch, sendBatchFile } from '../shared/batches';
import { idParams } from '../shared/schemas';
import { changeErrors, errors, security, tags } from './route-docs';

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
        response: { 200: batchList, ...errors(400) },
      },
    },
    async (request) => batchPage(deps.batches, principalOf(request), request.query),
  );

  route.get('/dashboard/api/batches/:id/events', { schema: { hide: true, params: idParams } }, async (request, reply) =>
    followBatch(request, reply, deps.batches, request.params.id),
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
        response: { 200: batch, ...changeErrors(404, 409) },
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
          response: { 200: batchFileResponse, ...errors(404) },
        },
      },
      async (request, reply) => sendBatchFile(reply, deps, principalOf(request), request.params.id, role),
    );
  }
};
