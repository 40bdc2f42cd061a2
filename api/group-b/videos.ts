import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { InvalidRequestError, NotFoundError } from '../../core/errors';
import { GENERATION_ID_PATTERN } from '../../core/ids';
import type { GenerationView } from '../../core/generation/view';
import type { GenerationRequest } from '../../service/generation/requests';
import { VIDEO_PREVIEWS } from '../../core/vocabulary';
import { principalOf } from '../shared/auth';
import { remixBody } from '../shared/generate-bodies';
import {
  imageUrl,
  video,
  videoGeneration,
  videoGenerationBody,
  videoGenerationOf,
  videoGenerationRequestOf,
  videoOf,
  videosCreateBody,
  videosRequestOf,
} from '../shared/openai/media';
import { GROUP_B_PARAMS, inGroupBWords } from '../shared/openai/words';
import { idParams } from '../shared/schemas';
import {
  errorsB,
  idempotencyHeaders,
  openaiPage,
  pageLimit,
  pageOrder,
  refuseUnknownFields,
  security,
  submitOptionsOf,
  tags,
} from './common';
import type { GroupBApp, GroupBDeps } from './common';
import { acceptForms } from './forms';

const VARIANTS = ['video', ...VIDEO_PREVIEWS] as const;
/** An extension by `previous_job_id` names its source so, and its added seconds `duration`. */
const EXTENSION_WORDS = { ...GROUP_B_PARAMS, id: 'previous_job_id' };
const contentQuery = z.object({
  variant: z
    .enum(VARIANTS, { error: `variant must be one of ${VARIANTS.join(', ')}` })
    .optional()
    .describe(
      'video (default): the file; thumbnail: its first frame (JPEG); spritesheet: frames spread over the clip in a grid (JPEG)',
    ),
});

/** `input_reference` as the SDK sends it: a file (multipart upload) or `{ image_url }` (a form field or JSON). */
function referenceOf(formField: string | undefined, value: unknown): { url?: string; file?: Buffer } {
  if (formField !== undefined) return { url: formField };
  if (value === undefined) return {};
  if (Buffer.isBuffer(value)) return { file: value };
  const url = typeof value === 'object' && value !== null && 'image_url' in value ? value.image_url : undefined;
  const parsed = imageUrl.safeParse(url);
  if (!parsed.success)
    throw new InvalidRequestError(
      'input_reference must be an uploaded image file or { "image_url": "https://…" }.',
      'input_reference',
    );
  return { url: parsed.data };
}

const videoListQuery = z.object({
  after: z
    .string()
    .regex(GENERATION_ID_PATTERN, { error: 'after must be the id of a video of a previous page (its last_id)' })
    .optional()
    .describe('The last_id of the previous page'),
  limit: pageLimit(100, 20),
  order: pageOrder.describe('By creation time; desc (newest first) by default'),
});

const videoList = openaiPage(video, 'VideoList');

const deletedVideo = z
  .object({ id: z.string(), object: z.literal('video.deleted'), deleted: z.literal(true) })
  .meta({ id: 'DeletedVideo' });

/** A spelling of the video API: where its videos are, how it shows one, and its words for reading and remixing. */
interface VideoApi<S extends typeof video | typeof videoGeneration> {
  path: '/v1/video/generations' | '/v1/videos';
  /** The OpenAPI operations' noun: openaiGet<noun>, openaiRemix<noun>. */
  noun: string;
  schema: S;
  view: (g: GenerationView) => z.infer<S>;
  readSummary: string;
  remixSummary: string;
  remixDescription: string;
}

/** The spec's video API. */
const VIDEO_GENERATIONS: VideoApi<typeof videoGeneration> = {
  path: '/v1/video/generations',
  noun: 'VideoGeneration',
  schema: videoGeneration,
  view: videoGenerationOf,
  readSummary: 'A video’s status, and its output URL once it has succeeded',
  remixSummary: 'A new video from a succeeded one with a new prompt; model, duration and size as the source ran',
  remixDescription:
    'Priced, held and charged like any video. 404: not a video of this account; 409: the video has not succeeded.',
};

/** OpenAI's video API, as its SDK's client.videos calls it. */
const OPENAI_VIDEOS: VideoApi<typeof video> = {
  path: '/v1/videos',
  noun: 'Video',
  schema: video,
  view: videoOf,
  readSummary: 'A video as OpenAI’s video API shows it (client.videos.retrieve)',
  remixSummary:
    'A new video from a completed one with a new prompt (client.videos.remix); model, seconds and size as the source ran',
  remixDescription:
    'Priced, held and charged like any video; remixed_from_video_id names the source. 404: not a video of this account; 409: the video has not completed.',
};

type Principal = ReturnType<typeof principalOf>;

/** Group B's videos in both spellings, the spec's and OpenAI's: each video is a generation like any other door's. */
export const groupBVideoRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  createVideoGenerationRoute(app, deps);
  await createVideoRoute(app, deps);
  listVideosRoute(app, deps);
  readAndRemixRoutes(app, deps, VIDEO_GENERATIONS);
  readAndRemixRoutes(app, deps, OPENAI_VIDEOS);
  deleteVideoRoute(app, deps);
  videoContentRoute(app, deps);
};

/** A video generation of the key's account; another kind (or account) is not found here. */
async function readVideo(deps: GroupBDeps, principal: Principal, id: string): Promise<GenerationView> {
  const g = await deps.service.get(principal, id);
  if (g.kind !== 'video') throw new NotFoundError(`Video '${id}' not found.`, { param: 'id' });
  return g;
}

/** Both spellings of a video submit: one generation, an Idempotency-Key per route. */
async function submitVideo(
  deps: GroupBDeps,
  principal: Principal,
  options: ReturnType<typeof submitOptionsOf>,
  request: Extract<GenerationRequest, { kind: 'video' }>,
): Promise<GenerationView> {
  return (await inGroupBWords(() => deps.service.submit(request, principal, options))).generation;
}

/** Both spellings of a remix: a new video of the source's account, an Idempotency-Key per route. */
function remixVideo(
  deps: GroupBDeps,
  principal: Principal,
  request: { params: { id: string }; body: { prompt: string }; headers: { 'idempotency-key'?: string | undefined } },
  route: string,
): Promise<GenerationView> {
  return inGroupBWords(async () => {
    const { id } = request.params;
    // The source is part of what the key stands for: the same key on another video is a conflict.
    const options = submitOptionsOf(request, route, { id, ...request.body });
    return (await deps.service.remix(principal, id, request.body.prompt, options)).generation;
  });
}

/** The spec's video submit, or an extension of a previous video (OpenRouter's `previous_job_id`). */
function createVideoGenerationRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.post(
    '/v1/video/generations',
    {
      preValidation: refuseUnknownFields(Object.keys(videoGenerationBody.shape)),
      schema: {
        operationId: 'openaiCreateVideoGeneration',
        tags,
        security,
        summary: 'Start a video, or extend a previous one (previous_job_id); poll GET /v1/video/generations/{id}',
        description:
          'With previous_job_id: that succeeded video of the account continued by `duration` seconds, priced as those seconds of its model at its resolution; remixed_from names it. 404: not a video of this account; 409 generation_not_succeeded: it has not succeeded; 400: image_url, another model, or an upstream that cannot extend.',
        body: videoGenerationBody,
        headers: idempotencyHeaders,
        response: { 200: videoGeneration, ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const options = submitOptionsOf(request, 'POST /v1/video/generations', body, body.deadline_seconds);
      const principal = principalOf(request);
      if (!body.previous_job_id)
        return videoGenerationOf(await submitVideo(deps, principal, options, videoGenerationRequestOf(body)));
      // OpenRouter's spelling of an extension: the previous job continued by `duration` seconds.
      if (body.image_url)
        throw new InvalidRequestError(
          'image_url: an extension starts from its previous job’s last frame.',
          'image_url',
        );
      const { previous_job_id: id, prompt, model, duration } = body;
      const change = { prompt, model, seconds: duration ?? 5 };
      return videoGenerationOf(
        (await inGroupBWords(() => deps.service.extend(principal, id, change, options), EXTENSION_WORDS)).generation,
      );
    },
  );
}

/** OpenAI's SDK sends video creation as multipart/form-data: the one route that reads forms. */
async function createVideoRoute(app: GroupBApp, deps: GroupBDeps): Promise<void> {
  await app.register(async (forms) => {
    await acceptForms(forms);
    forms.withTypeProvider<ZodTypeProvider>().post(
      '/v1/videos',
      {
        // A form is as strict as JSON: a field the video does not take is a 400 naming it.
        preValidation: refuseUnknownFields(Object.keys(videosCreateBody.shape)),
        schema: {
          operationId: 'openaiCreateVideo',
          tags,
          security,
          summary: 'Start a video as OpenAI’s video API does (the SDK’s client.videos.create)',
          description:
            'Accepts multipart/form-data (what the SDK sends) or JSON. input_reference is an uploaded image file or { image_url }.',
          body: videosCreateBody,
          headers: idempotencyHeaders,
          response: { 200: video, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 503) },
        },
      },
      async (request) => {
        const body = request.body;
        const { url: reference, file } = referenceOf(body['input_reference[image_url]'], body.input_reference);
        // The upload is in the request: its hash stands for it under an Idempotency-Key.
        const keyed = {
          ...body,
          input_reference: file ? createHash('sha256').update(file).digest('hex') : body.input_reference,
        };
        const options = {
          ...submitOptionsOf(request, 'POST /v1/videos', keyed, body.deadline_seconds),
          inputFile: file,
        };
        return videoOf(await submitVideo(deps, principalOf(request), options, videosRequestOf(body, reference)));
      },
    );
  });
}

/** The account's videos, a page at a time, whichever API made them. */
function listVideosRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
    '/v1/videos',
    {
      schema: {
        operationId: 'openaiListVideos',
        tags,
        security,
        summary: 'The account’s videos, newest first, as OpenAI’s video API lists them (client.videos.list)',
        description:
          'Every video of the account, whichever API made it. Pages follow `after` = the previous page’s `last_id`.',
        querystring: videoListQuery,
        response: { 200: videoList, ...errorsB(400, 401, 429, 500, 503) },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await inGroupBWords(() =>
        deps.service.list(principalOf(request), { limit: q.limit, after: q.after, order: q.order, kind: 'video' }),
      );
      const data = page.data.map(videoOf);
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.nextCursor !== null,
      };
    },
  );
}

/** Both spellings read a video and remix it alike; each shows the video its own way. */
function readAndRemixRoutes(
  app: GroupBApp,
  deps: GroupBDeps,
  api: VideoApi<typeof video> | VideoApi<typeof videoGeneration>,
): void {
  app.get(
    `${api.path}/:id`,
    {
      schema: {
        operationId: `openaiGet${api.noun}`,
        tags,
        security,
        summary: api.readSummary,
        params: idParams,
        response: { 200: api.schema, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => api.view(await readVideo(deps, principalOf(request), request.params.id)),
  );
  app.post(
    `${api.path}/:id/remix`,
    {
      preValidation: refuseUnknownFields(Object.keys(remixBody.shape)),
      schema: {
        operationId: `openaiRemix${api.noun}`,
        tags,
        security,
        summary: api.remixSummary,
        description: api.remixDescription,
        params: idParams,
        body: remixBody,
        headers: idempotencyHeaders,
        response: { 200: api.schema, ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 503) },
      },
    },
    async (request) => api.view(await remixVideo(deps, principalOf(request), request, `POST ${api.path}/{id}/remix`)),
  );
}

/** Deleting a finished video and its files; its charge stays. */
function deleteVideoRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.delete(
    '/v1/videos/:id',
    {
      schema: {
        operationId: 'openaiDeleteVideo',
        tags,
        security,
        summary: 'Deletes a completed or failed video and its files (client.videos.delete); its charge stays',
        description:
          'The video, its previews and its reference frame are deleted and it is not found again, in any door. Nothing is refunded: it was charged when it completed. 409: the video is still queued or in progress (cancel it first).',
        params: idParams,
        response: { 200: deletedVideo, ...errorsB(401, 404, 409, 429, 500, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = request.params;
      await readVideo(deps, principal, id);
      await inGroupBWords(() => deps.service.delete(principal, id));
      return { id, object: 'video.deleted' as const, deleted: true as const };
    },
  );
}

/** A succeeded video's file, or one of its previews. */
function videoContentRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
    '/v1/videos/:id/content',
    {
      schema: {
        operationId: 'openaiGetVideoContent',
        tags,
        security,
        summary: 'The video file, or one of its previews (client.videos.downloadContent); 404 until it has succeeded',
        description:
          'A video whose format gives no frames without a video decoder (only VP8 WebM does) has no thumbnail or spritesheet: 404.',
        params: idParams,
        querystring: contentQuery,
        response: {
          200: {
            description:
              'The file with its content type: the video (video/webm from the simulator), or image/jpeg for a preview',
            content: { '*/*': { schema: z.string().describe('binary') } },
          },
          ...errorsB(400, 401, 404, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { id } = request.params;
      const variant = request.query.variant ?? 'video';
      const g = await readVideo(deps, principal, id);
      const { file } = await deps.service.output(principal, id, variant === 'video' ? undefined : variant);
      if (!file) {
        throw new NotFoundError(
          g.status === 'succeeded'
            ? `Video '${id}' has no ${variant}: its format gives no frames without a video decoder.`
            : `Video '${id}' has no content yet; its status is not completed.`,
          { param: variant === 'video' ? 'id' : 'variant' },
        );
      }
      return reply.header('content-type', file.contentType).send(file.data as unknown as string);
    },
  );
}
