import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { InvalidRequestError, markAfterAdmission, NotFoundError, ProviderFailedError } from '../../core/errors';
import { GENERATION_ID_PATTERN } from '../../core/ids';
import type { GenerationView } from '../../core/generation/view';
import type { GenerationRequest } from '../../service/generation/requests';
import { VIDEO_PREVIEWS } from '../../core/vocabulary';
import { principalOf } from '../shared/auth';
import { cancelAfterHeader, idempotencyKey } from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import { remixBody } from '../shared/generate-bodies';
import {
  answerFormatOf,
  EDIT_PARAMS,
  editOf,
  imageEditBody,
  imageGenerationBody,
  imageRequestOf,
  imagesResponseOf,
  imageUrl,
  imagesResponse,
  video,
  videoGeneration,
  videoGenerationBody,
  videoGenerationOf,
  videoGenerationRequestOf,
  videoOf,
  videosCreateBody,
  videosRequestOf,
} from '../shared/openai/media';
import { inGroupBWords } from '../shared/openai/words';
import { idParams } from '../shared/schemas';
import { errorsB, openaiPage, refuseUnknownFields, security, submitOptionsOf, tags } from './common';
import type { OpenAiDeps } from './common';
import { acceptForms } from './forms';

const VARIANTS = ['video', ...VIDEO_PREVIEWS] as const;
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

/** Group B images and videos: each image and each video is a generation like any other door's. */

const idempotencyHeaders = z.looseObject({
  'idempotency-key': idempotencyKey.describe(
    'The same key and body within 24 h return the same generations, never a second hold',
  ),
  'cancel-after': cancelAfterHeader,
  ...customerHeaders,
});

const videoListQuery = z.object({
  after: z
    .string()
    .regex(GENERATION_ID_PATTERN, { error: 'after must be the id of a video of a previous page (its last_id)' })
    .optional()
    .describe('The last_id of the previous page'),
  limit: z.coerce
    .number()
    .int()
    .min(1, { error: 'limit must be between 1 and 100' })
    .max(100, { error: 'limit must be between 1 and 100' })
    .default(20),
  order: z
    .enum(['asc', 'desc'], { error: "order must be 'asc' or 'desc'" })
    .default('desc')
    .describe('By creation time; desc (newest first) by default'),
});

const videoList = openaiPage(video, 'VideoList');

export const openaiMediaRoutes: FastifyPluginAsyncZod<OpenAiDeps> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  /** A video generation of the key's account; another kind (or account) is not found here. */
  const readVideo = async (principal: ReturnType<typeof principalOf>, id: string): Promise<GenerationView> => {
    const g = await deps.service.get(principal, id);
    if (g.kind !== 'video') throw new NotFoundError(`Video '${id}' not found.`, { param: 'id' });
    return g;
  };

  /** Both spellings of a video submit: one generation, an Idempotency-Key per route. */
  const submitVideo = async (
    principal: ReturnType<typeof principalOf>,
    options: ReturnType<typeof submitOptionsOf>,
    request: Extract<GenerationRequest, { kind: 'video' }>,
  ): Promise<GenerationView> =>
    (await inGroupBWords(() => deps.service.submit(request, principal, options))).generation;

  /** Both spellings of a remix: a new video of the source's account, an Idempotency-Key per route. */
  const remixVideo = (
    principal: ReturnType<typeof principalOf>,
    request: { params: { id: string }; body: { prompt: string }; headers: { 'idempotency-key'?: string | undefined } },
    route: string,
  ): Promise<GenerationView> =>
    inGroupBWords(async () => {
      const { id } = request.params;
      // The source is part of what the key stands for: the same key on another video is a conflict.
      const options = submitOptionsOf(request, route, { id, ...request.body });
      return (await deps.service.remix(principal, id, request.body.prompt, options)).generation;
    });

  /** An image's file, for a b64_json answer. */
  const readFile = (principal: ReturnType<typeof principalOf>) => async (id: string) => {
    const { file } = await deps.service.output(principal, id);
    return file?.data;
  };

  route.post(
    '/v1/images/generations',
    {
      preValidation: refuseUnknownFields(Object.keys(imageGenerationBody.shape)),
      schema: {
        operationId: 'openaiGenerateImages',
        tags,
        security,
        summary: 'n images (1 to 4), each a generation of its own; answered when they are done',
        body: imageGenerationBody,
        headers: idempotencyHeaders,
        response: { 200: imagesResponse, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 502, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const principal = principalOf(request);
      const { request: images, count } = imageRequestOf(body);
      const { generations } = await inGroupBWords(() =>
        deps.service.submitMany(images, principal, {
          ...submitOptionsOf(request, 'POST /v1/images/generations', body, body.deadline_seconds),
          count,
        }),
      );
      try {
        if (!generations.some((g) => g.status === 'succeeded' || g.error))
          throw new ProviderFailedError(
            'The images are still being generated; they will be listed at GET /api/v1/generations.',
          );
        return await imagesResponseOf(
          generations,
          answerFormatOf(body.model, body.response_format),
          readFile(principal),
        );
      } catch (err) {
        throw markAfterAdmission(err);
      }
    },
  );

  // OpenAI's SDK sends image edits as multipart/form-data: up to 16 images (image, image[]) and a mask.
  await app.register(async (forms) => {
    await acceptForms(forms, { limits: { fileSize: 25 * 1024 * 1024, files: 17, fields: 20 } });
    forms.withTypeProvider<ZodTypeProvider>().post(
      '/v1/images/edits',
      {
        schema: {
          operationId: 'openaiEditImages',
          tags,
          security,
          summary:
            'n edits (1 to 4) of an image (client.images.edit), each a generation of its own, priced as the model’s image',
          description:
            'Multipart (image or image[] files, mask) as the SDKs send it, or JSON with images and mask by image_url or file_id (the id of one of the account’s ' +
            'succeeded image generations). The inputs are fetched and checked before anything is held; a bad one is a 400 naming it. Models that edit list ' +
            'features: ["edit"] in GET /api/v1/models; others are a 400 naming model.',
          body: imageEditBody,
          headers: idempotencyHeaders,
          response: { 200: imagesResponse, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 502, 503) },
        },
      },
      async (request) => {
        const body = request.body;
        const principal = principalOf(request);
        const edit = editOf(body);
        // Uploads are in the request: their hashes stand for them under an Idempotency-Key.
        const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
        const keyed = {
          ...body,
          image: undefined,
          'image[]': undefined,
          mask: Buffer.isBuffer(body.mask) ? hash(body.mask) : body.mask,
          inputs: edit.images.map((i) => ('file' in i ? hash(i.file) : i)),
        };
        const { generations } = await inGroupBWords(
          () =>
            deps.service.submitMany(
              {
                kind: 'image',
                model: body.model,
                prompt: body.prompt,
                outputFormat: body.output_format ?? undefined,
                edit,
              },
              principal,
              {
                ...submitOptionsOf(request, 'POST /v1/images/edits', keyed, body.deadline_seconds),
                count: body.n ?? 1,
              },
            ),
          EDIT_PARAMS,
        );
        try {
          if (!generations.some((g) => g.status === 'succeeded' || g.error))
            throw new ProviderFailedError(
              'The edits are still being made; they will be listed at GET /api/v1/generations.',
            );
          return await imagesResponseOf(
            generations,
            answerFormatOf(body.model, body.response_format),
            readFile(principal),
          );
        } catch (err) {
          throw markAfterAdmission(err);
        }
      },
    );
  });

  route.post(
    '/v1/video/generations',
    {
      preValidation: refuseUnknownFields(Object.keys(videoGenerationBody.shape)),
      schema: {
        operationId: 'openaiCreateVideoGeneration',
        tags,
        security,
        summary: 'Start a video; poll GET /v1/video/generations/{id}',
        body: videoGenerationBody,
        headers: idempotencyHeaders,
        response: { 200: videoGeneration, ...errorsB(400, 401, 402, 403, 409, 413, 429, 500, 503) },
      },
    },
    async (request) => {
      const body = request.body;
      const options = submitOptionsOf(request, 'POST /v1/video/generations', body, body.deadline_seconds);
      return videoGenerationOf(await submitVideo(principalOf(request), options, videoGenerationRequestOf(body)));
    },
  );

  route.get(
    '/v1/video/generations/:id',
    {
      schema: {
        operationId: 'openaiGetVideoGeneration',
        tags,
        security,
        summary: 'A video’s status, and its output URL once it has succeeded',
        params: idParams,
        response: { 200: videoGeneration, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => videoGenerationOf(await readVideo(principalOf(request), request.params.id)),
  );

  route.post(
    '/v1/video/generations/:id/remix',
    {
      preValidation: refuseUnknownFields(Object.keys(remixBody.shape)),
      schema: {
        operationId: 'openaiRemixVideoGeneration',
        tags,
        security,
        summary: 'A new video from a succeeded one with a new prompt; model, duration and size as the source ran',
        description:
          'Priced, held and charged like any video. 404: not a video of this account; 409: the video has not succeeded.',
        params: idParams,
        body: remixBody,
        headers: idempotencyHeaders,
        response: { 200: videoGeneration, ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 503) },
      },
    },
    async (request) =>
      videoGenerationOf(await remixVideo(principalOf(request), request, 'POST /v1/video/generations/{id}/remix')),
  );

  // OpenAI's SDK sends video creation as multipart/form-data: the one route that reads forms.
  await app.register(async (forms) => {
    await acceptForms(forms);
    forms.withTypeProvider<ZodTypeProvider>().post(
      '/v1/videos',
      {
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
        return videoOf(await submitVideo(principalOf(request), options, videosRequestOf(body, reference)));
      },
    );
  });

  route.get(
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

  route.get(
    '/v1/videos/:id',
    {
      schema: {
        operationId: 'openaiGetVideo',
        tags,
        security,
        summary: 'A video as OpenAI’s video API shows it (client.videos.retrieve)',
        params: idParams,
        response: { 200: video, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => videoOf(await readVideo(principalOf(request), request.params.id)),
  );

  route.post(
    '/v1/videos/:id/remix',
    {
      preValidation: refuseUnknownFields(Object.keys(remixBody.shape)),
      schema: {
        operationId: 'openaiRemixVideo',
        tags,
        security,
        summary:
          'A new video from a completed one with a new prompt (client.videos.remix); model, seconds and size as the source ran',
        description:
          'Priced, held and charged like any video; remixed_from_video_id names the source. 404: not a video of this account; 409: the video has not completed.',
        params: idParams,
        body: remixBody,
        headers: idempotencyHeaders,
        response: { 200: video, ...errorsB(400, 401, 402, 403, 404, 409, 413, 429, 500, 503) },
      },
    },
    async (request) => videoOf(await remixVideo(principalOf(request), request, 'POST /v1/videos/{id}/remix')),
  );

  route.get(
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
      const g = await readVideo(principal, id);
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
};
