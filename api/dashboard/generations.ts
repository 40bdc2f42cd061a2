import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import type { StandingMonitor } from '../shared/standing';
import { listQuery } from '../shared/fields';
import { groupCGenerateBody, groupCRequestOf } from '../shared/generate-bodies';
import { generation, generationList, generationListOf, generationOf, idParams, quote } from '../shared/schemas';
import { changeErrors, errors, security, tags } from './route-docs';
import { liveEvents } from './events';

/**
 * The generations page and the playground (mounted inside the session scope): the list, cancel,
 * a price with nothing held, and the live updates of the account's generations and balance.
 */
export const generationRoutes: FastifyPluginAsyncZod<{
  service: GenerationService;
  /** Checks open live streams' sessions (api/shared/standing.ts). */
  standing: StandingMonitor;
}> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/dashboard/api/generations',
    {
      schema: {
        operationId: 'dashboardListGenerations',
        tags,
        security,
        summary: 'The account’s generations, newest first (as GET /api/v1/generations)',
        querystring: listQuery,
        response: { 200: generationList, ...errors(400) },
      },
    },
    async (request) => generationListOf(await deps.service.list(principalOf(request), request.query)),
  );

  route.post(
    '/dashboard/api/generations/:id/cancel',
    {
      schema: {
        operationId: 'dashboardCancelGeneration',
        tags,
        security,
        summary: 'Cancel a queued or running generation; its hold is released',
        params: idParams,
        response: { 200: generation, ...changeErrors(404, 409) },
      },
    },
    async (request) => generationOf(await deps.service.cancel(principalOf(request), request.params.id)),
  );

  route.post(
    '/dashboard/api/quote',
    {
      schema: {
        operationId: 'dashboardQuote',
        tags,
        security,
        summary: 'The price of a group C request (POST /api/generate’s body), with nothing held',
        body: groupCGenerateBody,
        response: { 200: quote, ...changeErrors(400) },
      },
    },
    async (request) => deps.service.quote(groupCRequestOf(request.body), principalOf(request), 'dashboard'),
  );

  // Live updates of the account's generations and balance (Server-Sent Events): not JSON, so not in the document.
  route.get('/dashboard/api/events', { schema: { hide: true } }, async (request, reply) => {
    liveEvents({ service: deps.service, standing: deps.standing }, request, reply);
  });
};
