import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import { generateHeaders, generateOptionsOf, idempotencyOf, listQuery, spendCapOption } from '../shared/fields';
import { groupACallbackOption, remixBody } from '../shared/generate-bodies';
import {
  errorResponses,
  generation,
  generationList,
  generationListOf,
  generationOf,
  idParams,
} from '../shared/schemas';
import { GROUP_A_PARAMS, security, tags } from './route-docs';

/** The account's generations (mounted inside the key's scope): the list, one, a remix of a video, and cancel. */
export const generationRoutes: FastifyPluginAsyncZod<{ service: GenerationService }> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/api/v1/generations',
    {
      schema: {
        operationId: 'listGenerations',
        tags,
        summary: 'The account’s generations, newest first, every group’s',
        security,
        querystring: listQuery,
        response: { 200: generationList, ...errorResponses(400, 401, 429, 500, 503) },
      },
    },
    async (request) => generationListOf(await deps.service.list(principalOf(request), request.query)),
  );

  route.get(
    '/api/v1/generations/:id',
    {
      schema: {
        operationId: 'getGeneration',
        tags,
        summary: 'One generation: poll its status, read its output URL once it has succeeded',
        security,
        params: idParams,
        response: { 200: generation, ...errorResponses(401, 404, 429, 500, 503) },
      },
    },
    async (request) => generationOf(await deps.service.get(principalOf(request), request.params.id)),
  );

  route.post(
    '/api/v1/generations/:id/remix',
    {
      schema: {
        operationId: 'remixGeneration',
        tags,
        summary:
          'A new video from a succeeded one with a new prompt; model, seconds, resolution and aspect as the source ran',
        description:
          'Needs the scope generate:video. Priced, held and charged like any video; answers 202 with the new generation (params.remixedFrom names the source) and a Location to poll. ' +
          '404: not a video of this account; 409 generation_not_succeeded: the video has not succeeded.',
        security,
        params: idParams,
        body: remixBody,
        headers: generateHeaders,
        response: {
          202: generation.describe('Accepted and in flight: poll the Location'),
          ...errorResponses(400, 401, 402, 403, 404, 409, 413, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const route = 'POST /api/v1/generations/{id}/remix';
      const { id } = request.params;
      // The source is part of what the key stands for: the same key on another video is a conflict.
      const options = {
        ...generateOptionsOf(request, 'group-a', route, { customer: request.body.customer }),
        idempotency: idempotencyOf(request, route, { id, ...request.body }),
        ...spendCapOption(request.body.max_credits, 'max_credits'),
        ...groupACallbackOption(request.body),
      };
      const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () =>
        deps.service.remix(principalOf(request), id, request.body.prompt, options),
      );
      if (g.status === 'queued' || g.status === 'running')
        reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
      return generationOf(g);
    },
  );

  route.post(
    '/api/v1/generations/:id/cancel',
    {
      schema: {
        operationId: 'cancelGeneration',
        tags,
        summary: 'Cancel a queued or running generation: it fails with code cancelled and its hold is released',
        description:
          'Cancelling a cancelled generation answers it again; any other finished one is a 409 naming its state.',
        security,
        params: idParams,
        response: { 200: generation, ...errorResponses(401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) => generationOf(await deps.service.cancel(principalOf(request), request.params.id)),
  );
};
