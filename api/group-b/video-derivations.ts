import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import { principalOf } from '../shared/auth';
import { extensionSeconds } from '../shared/generate-bodies';
import { callbackFields, endUser, formNumber, maxCredits, prompt, video, videoOf } from '../shared/openai/media';
import { GROUP_B_PARAMS, inGroupBWords } from '../shared/openai/words';
import { errorsB, idempotencyHeaders, refuseUnknownFields, security, submitOptionsOf, tags } from './common';
import type { GroupBDeps } from './common';
import { acceptForms } from './forms';

/**
 * OpenAI's video extensions and edits (`client.videos.extend`, `client.videos.edit`), as its video
 * API had them and LiteLLM, Azure and new-api keep them: the source is a completed video of the
 * account named by id (`{ "video": { "id" } }` in JSON, the form field `video[id]` as the SDK sends
 * it). An uploaded video file is refused: only a video made here has what pricing needs (its
 * model, resolution and length). The new video names its source in `remixed_from_video_id`, the
 * one field of OpenAI's video that names another.
 */

const videoReference = {
  video: z
    .unknown()
    .optional()
    .describe('The completed video: { "id": "<video id>" }; an uploaded file is refused (400)'),
  'video[id]': z.string().optional().describe('The completed video’s id, as a multipart form sends { id }'),
};
const customer = { user: endUser.optional(), safety_identifier: endUser.nullish() };

const extensionBody = z
  .object({
    prompt: prompt.describe('What happens next; checked by the safety guard before pricing'),
    seconds: formNumber(extensionSeconds).describe(
      'Seconds to add (OpenAI allowed 4, 8, 12, 16, 20; any whole number above 0 is taken), clamped to the model’s range',
    ),
    ...videoReference,
    max_credits: formNumber(maxCredits),
    ...customer,
    ...callbackFields,
  })
  .meta({
    id: 'VideoExtensionRequest',
    examples: [{ prompt: 'the waves calm down', seconds: '8', video: { id: 'gen_…' } }],
  });

const editBody = z
  .object({
    prompt: prompt.describe('How to change the video; checked by the safety guard before pricing'),
    ...videoReference,
    max_credits: formNumber(maxCredits),
    ...customer,
    ...callbackFields,
  })
  .meta({ id: 'VideoEditRequest', examples: [{ prompt: 'the same waves under snow', video: { id: 'gen_…' } }] });

/** The source video's id, from `video[id]` (a form) or `video: { id }` (JSON). */
function sourceIdOf(body: { video?: unknown; 'video[id]'?: string | undefined }): string {
  if (body['video[id]'] !== undefined) return body['video[id]'];
  const value = body.video;
  if (Buffer.isBuffer(value))
    throw new InvalidRequestError(
      'video: an uploaded file cannot be extended or edited here; name a completed video of this account as { "id": "<video id>" }.',
      'video',
    );
  const id = typeof value === 'object' && value !== null && 'id' in value ? value.id : undefined;
  if (typeof id !== 'string' || id === '')
    throw new InvalidRequestError('video is required: { "id": "<the id of a completed video>" }.', 'video');
  return id;
}

/** OpenAI's video API calls them `seconds`, as the service does. */
const WORDS = { ...GROUP_B_PARAMS, seconds: 'seconds' };

const answers = { 200: video, ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 503) };
const refusals =
  'Nothing is held for a refusal. 400: seconds not a whole number above 0, no video named, an uploaded file, or a model whose provider cannot do it; 404: not a video of this account; 409 generation_not_succeeded: it has not completed.';

/** `POST /v1/videos/extensions` and `POST /v1/videos/edits`, in JSON or multipart/form-data. */
export const groupBVideoDerivationRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  await acceptForms(app);
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.post(
    '/v1/videos/extensions',
    {
      preValidation: refuseUnknownFields(Object.keys(extensionBody.shape)),
      schema: {
        operationId: 'openaiExtendVideo',
        tags,
        security,
        summary: 'A completed video continued by `seconds` more from its last frame (client.videos.extend)',
        description:
          'Priced as `seconds` (clamped to the model’s range) of the source’s model at its resolution, held before it runs, charged when it completes and released if it fails. ' +
          'The new video is the source followed by the added seconds: its `seconds` is the whole length, `remixed_from_video_id` the source. ' +
          refusals,
        body: extensionBody,
        headers: idempotencyHeaders,
        response: answers,
      },
    },
    async (request) => {
      const body = request.body;
      const id = sourceIdOf(body);
      // The source is part of what an Idempotency-Key stands for, however the request named it.
      const options = submitOptionsOf(request, 'POST /v1/videos/extensions', { ...body, video: id });
      const made = await inGroupBWords(
        () => deps.service.extend(principalOf(request), id, { prompt: body.prompt, seconds: body.seconds }, options),
        WORDS,
      );
      return videoOf(made.generation);
    },
  );

  route.post(
    '/v1/videos/edits',
    {
      preValidation: refuseUnknownFields(Object.keys(editBody.shape)),
      schema: {
        operationId: 'openaiEditVideo',
        tags,
        security,
        summary: 'An edited copy of a completed video, changed by a prompt, at its length (client.videos.edit)',
        description:
          'Priced as a run of the source’s length with its model and resolution, held before it runs, charged when it completes and released if it fails; `remixed_from_video_id` names the source. ' +
          refusals,
        body: editBody,
        headers: idempotencyHeaders,
        response: answers,
      },
    },
    async (request) => {
      const body = request.body;
      const id = sourceIdOf(body);
      const options = submitOptionsOf(request, 'POST /v1/videos/edits', { ...body, video: id });
      const made = await inGroupBWords(() => deps.service.edit(principalOf(request), id, body.prompt, options), WORDS);
      return videoOf(made.generation);
    },
  );
};
