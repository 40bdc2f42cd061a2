import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchRates } from '../../core/batches/pricing';
import type { GenerationService } from '../../service/generation/service';
import { modelListing } from '../../service/catalogue/model-list';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import type { StandingMonitor } from '../shared/standing';
import { generateHeaders, generateOptionsOf, spendCapOption } from '../shared/fields';
import { groupACallbackOption, groupAGenerateBody, groupARequestOf } from '../shared/generate-bodies';
import { errorResponses, generation, generationKind, generationOf, modelEntry, quote } from '../shared/schemas';
import { accountRoutes } from './account';
import { generationRoutes } from './generations';
import { liveEventRoutes } from './live-events';
import { GROUP_A_PARAMS, security, tags } from './route-docs';

/** Group A: the unified API under /api/v1. */
export const groupARoutes: FastifyPluginAsyncZod<
  AuthDeps & { service: GenerationService; standing: StandingMonitor; batchRates: BatchRates }
> = async (app, deps) => {
  // Public: no key, no rate limit (it reads nothing of an account).
  app.get(
    '/api/v1/models',
    {
      schema: {
        operationId: 'listModels',
        tags,
        summary: 'Every model with its unit, prices (alone and in a batch), seconds range and defaults',
        security: [],
        querystring: z.object({ kind: generationKind.optional() }),
        response: { 200: z.object({ data: z.array(modelEntry) }), ...errorResponses(400) },
      },
    },
    async (request) => ({ data: modelListing(deps.batchRates, request.query.kind) }),
  );

  await app.register(async (keyed) => {
    keyed.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
    const route = keyed.withTypeProvider<ZodTypeProvider>();

    route.post(
      '/api/v1/generate',
      {
        schema: {
          operationId: 'generate',
          tags,
          summary: 'Generate an image, video, chat reply or upscale',
          description:
            'Needs the scope generate:<kind>. Images and chat replies finish within the call and answer 200 (unless `Prefer: respond-async`); ' +
            'videos and upscales answer 202 with `queued` or `running` and a Location to poll.',
          security,
          body: groupAGenerateBody,
          headers: generateHeaders,
          response: {
            200: generation.describe('Finished (succeeded or failed) within the call'),
            202: generation.describe('Accepted and in flight: poll the Location'),
            ...errorResponses(400, 401, 402, 403, 409, 413, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const options = {
          ...generateOptionsOf(request, 'group-a', 'POST /api/v1/generate', {
            deadlineSeconds: request.body.deadline_seconds,
            customer: request.body.customer,
          }),
          ...spendCapOption(request.body.max_credits, 'max_credits'),
          ...groupACallbackOption(request.body),
        };
        const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () =>
          deps.service.submit(groupARequestOf(request.body), principalOf(request), options),
        );
        if (options.respondAsync) reply.header('Preference-Applied', 'respond-async');
        if (g.status === 'queued' || g.status === 'running') {
          reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
        }
        return generationOf(g);
      },
    );

    route.post(
      '/api/v1/quote',
      {
        schema: {
          operationId: 'quote',
          tags,
          summary: 'What a generate request would cost now, with nothing held',
          description:
            'The body of POST /api/v1/generate, priced by the same rules (scope, safety guard, model, clamping) without admitting it: nothing is held, run or recorded. An upscale’s image is not fetched.',
          security,
          body: groupAGenerateBody,
          response: { 200: quote, ...errorResponses(400, 401, 403, 429, 500, 503) },
        },
      },
      async (request) =>
        inDoorWords(GROUP_A_PARAMS, () =>
          deps.service.quote(groupARequestOf(request.body), principalOf(request), 'group-a'),
        ),
    );

    await keyed.register(accountRoutes, { pool: deps.pool, service: deps.service });
    await keyed.register(generationRoutes, { service: deps.service });
    await keyed.register(liveEventRoutes, { service: deps.service, standing: deps.standing });
  });
};
