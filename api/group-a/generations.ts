import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import { generateHeaders, generateOptionsOf, idempotencyOf, listQuery, spendCapOption } from '../shared/fields';
import type { z } from 'zod';
import type { Principal } from '../../core/accounts/principal';
import type { SubmitOptions, Submitted } from '../../service/generation/service';
import { editBody, extendBody, groupACallbackOption, remixBody } from '../shared/generate-bodies';
import {
  errorResponses,
  generation,
  generationList,
  generationListOf,
  generationOf,
  idParams,
} from '../shared/schemas';
import { GROUP_A_PARAMS, security, tags } from './route-docs';

interface GenerationDeps {
  service: GenerationService;
}
type GenerationApp = Parameters<FastifyPluginAsyncZod<GenerationDeps>>[0];

/** The account's generations (mounted inside the key's scope): the list, one, a remix, extension or edit of a video, and cancel. */
export const generationRoutes: FastifyPluginAsyncZod<GenerationDeps> = async (app, deps) => {
  readGenerationRoutes(app, deps);
  videoDerivationRoutes(app, deps);
  cancelGenerationRoute(app, deps);
};

/** The account's generations a page at a time, and one generation. */
function readGenerationRoutes(app: GenerationApp, deps: GenerationDeps): void {
  app.get(
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

  app.get(
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
}

/**
 * A new video from a succeeded one of the account (a remix, an extension, an edit): 202 with the
 * new generation and a Location to poll. The source is part of what an Idempotency-Key stands
 * for: the same key on another video is a conflict.
 */
function fromVideoRoute<
  B extends z.ZodType<{
    prompt: string;
    max_credits?: number | null | undefined;
    customer?: string | undefined;
    webhook?: string | undefined;
    webhook_events_filter?: string[] | undefined;
  }>,
>(
  app: GenerationApp,
  action: 'remix' | 'extend' | 'edit',
  docs: { operationId: string; summary: string; description: string; body: B },
  submit: (principal: Principal, id: string, body: z.infer<B>, options: SubmitOptions) => Promise<Submitted>,
): void {
  const path = `/api/v1/generations/{id}/${action}`;
  app.post(
    `/api/v1/generations/:id/${action}`,
    {
      schema: {
        ...docs,
        tags,
        security,
        params: idParams,
        headers: generateHeaders,
        response: {
          202: generation.describe('Accepted and in flight: poll the Location'),
          ...errorResponses(400, 401, 402, 403, 404, 409, 413, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const operation = `POST ${path}`;
      const { id } = request.params;
      // Validated by `docs.body`; the type provider cannot see through the generic schema.
      const body = request.body as z.infer<B>;
      const options = {
        ...generateOptionsOf(request, 'group-a', operation, { customer: body.customer }),
        idempotency: idempotencyOf(request, operation, { id, ...body }),
        ...spendCapOption(body.max_credits, 'max_credits'),
        ...groupACallbackOption(body),
      };
      const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () =>
        submit(principalOf(request), id, body, options),
      );
      if (g.status === 'queued' || g.status === 'running')
        reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
      return generationOf(g);
    },
  );
}

/** A remix, an extension and an edit of a succeeded video, each a new generation. */
function videoDerivationRoutes(app: GenerationApp, deps: GenerationDeps): void {
  const notSucceeded = '404: not a video of this account; 409 generation_not_succeeded: the video has not succeeded.';
  fromVideoRoute(
    app,
    'remix',
    {
      operationId: 'remixGeneration',
      summary:
        'A new video from a succeeded one with a new prompt; model, seconds, resolution and aspect as the source ran',
      description:
        'Needs the scope generate:video. Priced, held and charged like any video; answers 202 with the new generation (params.remixedFrom names the source) and a Location to poll. ' +
        notSucceeded,
      body: remixBody,
    },
    (principal, id, body, options) => deps.service.remix(principal, id, body.prompt, options),
  );
  fromVideoRoute(
    app,
    'extend',
    {
      operationId: 'extendGeneration',
      summary:
        'A succeeded video continued by `seconds` more from its last frame; model, resolution and aspect as it ran',
      description:
        'Needs the scope generate:video. Priced as `seconds` (clamped to the model’s range) of the source’s model at its resolution, held before it runs, charged when it succeeds and released if it fails. ' +
        'The new generation’s file is the source followed by the added seconds: params.extendedFrom names the source, params.seconds the seconds added, params.stitchedSeconds the whole length. ' +
        `400: seconds not a whole number above 0, or a model whose provider cannot extend videos (nothing held). ${notSucceeded}`,
      body: extendBody,
    },
    (principal, id, body, options) =>
      deps.service.extend(principal, id, { prompt: body.prompt, seconds: body.seconds }, options),
  );
  fromVideoRoute(
    app,
    'edit',
    {
      operationId: 'editGeneration',
      summary:
        'An edited copy of a succeeded video, changed by a prompt; its length, model, resolution and aspect kept',
      description:
        'Needs the scope generate:video. Priced as a run of the source’s length, held before it runs, charged when it succeeds and released if it fails; params.editedFrom names the source. ' +
        `400: a model whose provider cannot edit videos (nothing held). ${notSucceeded}`,
      body: editBody,
    },
    (principal, id, body, options) => deps.service.edit(principal, id, body.prompt, options),
  );
}

/** Cancelling a queued or running generation. */
function cancelGenerationRoute(app: GenerationApp, deps: GenerationDeps): void {
  app.post(
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
}
