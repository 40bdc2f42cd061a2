import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { createHash } from 'node:crypto';
import { InvalidRequestError, markAfterAdmission, NotFoundError, ProviderFailedError } from '../../core/errors';
import { GENERATION_ID_PATTERN } from '../../core/ids';
import type { GenerationView } from '../../core/generation/view';
import { VIDEO_PREVIEWS } from '../../core/vocabulary';
import { principalOf } from '../shared/auth';
import {
  cancelAfterHeader,
  deadlineSeconds,
  idempotencyKey,
  imageUrl as httpImageUrl,
  spendCapField,
  mediaPrompt,
  modelId,
} from '../shared/fields';
import { customerHeaders } from '../shared/customers';
import { remixBody } from '../shared/generate-bodies';
import { idParams } from '../shared/schemas';
import {
  errorsB,
  inGroupBWords,
  openAiEndUser,
  refuseUnknownFields,
  security,
  submitOptionsOf,
  tags,
  unixSeconds,
} from './common';
import type { OpenAiDeps } from './common';

const maxCredits = spendCapField('max_credits');
const endUser = openAiEndUser();

/** Group B images and videos: each image and each video is a generation like any other door's. */

const prompt = mediaPrompt.describe('Checked by the safety guard before pricing');
const idempotencyHeaders = z.looseObject({
  'idempotency-key': idempotencyKey.describe(
    'The same key and body within 24 h return the same generations, never a second hold',
  ),
  'cancel-after': cancelAfterHeader,
  ...customerHeaders,
});

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

const IMAGE_SIZES = { '1024x1024': [1024, 1024], '1792x1024': [1792, 1024], '1024x1792': [1024, 1792] } as const;

export const imageGenerationBody = z
  .object({
    model: modelId.describe('Any image id of GET /v1/models (flux, gpt-image-1, image-nano-pro…)'),
    prompt,
    n: z
      .number()
      .int()
      .min(1, { error: 'n must be 1 to 4' })
      .max(4, { error: 'n must be 1 to 4' })
      .nullish()
      .describe('1 to 4 images; each is a generation of its own and costs its price'),
    size: z
      .enum(Object.keys(IMAGE_SIZES) as ['1024x1024', '1792x1024', '1024x1792'], {
        error: 'size must be 1024x1024, 1792x1024 or 1024x1792',
      })
      .nullish(),
    quality: z
      .enum(['standard', 'hd'], { error: "quality must be 'standard' or 'hd'" })
      .nullish()
      .describe(
        'hd: the model’s high variant where one is listed (gpt-image-1 → gpt-image-1-high), else twice the price',
      ),
    response_format: z
      .enum(['url', 'b64_json'], { error: "response_format must be 'url' or 'b64_json'" })
      .nullish()
      .describe('url (default): signed, valid 24 h'),
    style: z.enum(['vivid', 'natural']).nullish().describe('Accepted and ignored'),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    deadline_seconds: deadlineSeconds.nullable(),
    max_credits: maxCredits.nullable(),
  })
  .meta({
    id: 'ImageGenerationRequest',
    examples: [
      {
        model: 'flux',
        prompt: 'a lighthouse at dusk',
        n: 2,
        size: '1024x1024',
        quality: 'standard',
        response_format: 'url',
      },
    ],
  });

const imagesResponse = z
  .object({
    created: z.number().int(),
    data: z.array(
      z.object({
        url: z.string().optional().describe('Signed, valid 24 h'),
        b64_json: z.string().optional(),
        revised_prompt: z.null(),
        generation_id: z.string().describe('The image’s generation (groups A and C show it too)'),
      }),
    ),
    credits_charged: z.number().describe('Credits charged for these images'),
  })
  .meta({ id: 'ImagesResponse' });

// ---------------------------------------------------------------------------------------------
// Video: the spec's /v1/video/generations and OpenAI's /v1/videos, one generation either way
// ---------------------------------------------------------------------------------------------

const imageUrl = httpImageUrl('image_url');

export const videoGenerationBody = z
  .object({
    model: modelId.describe('kling-2.1-pro, wan-2.1, minimax-video-01 (or any video id of GET /v1/models)'),
    prompt,
    duration: z
      .union([z.literal(5), z.literal(10)], { error: 'duration must be 5 or 10' })
      .nullish()
      .describe('Seconds: 5 or 10 (default 5), clamped to the model’s range'),
    image_url: imageUrl.nullish().describe('A reference frame (image-to-video), fetched by the service'),
    deadline_seconds: deadlineSeconds.nullable(),
    max_credits: maxCredits.nullable(),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
  })
  .meta({
    id: 'VideoGenerationRequest',
    examples: [{ model: 'kling-2.1-pro', prompt: 'waves rolling onto a beach', duration: 5 }],
  });

const videoGeneration = z
  .object({
    id: z.string(),
    object: z.literal('video.generation'),
    model: z.string().describe('The catalogue model it runs as'),
    status: z.enum(['queued', 'running', 'succeeded', 'failed']),
    duration: z.number(),
    created_at: z.number().int(),
    completed_at: z.number().int().nullable(),
    output_url: z.string().nullable().describe('Signed, valid 24 h; null until succeeded'),
    thumbnail_url: z
      .string()
      .nullable()
      .describe(
        'The first frame (JPEG), signed, valid 24 h; set while in progress once the provider has it; null before, when failed, or when the video’s format gives none',
      ),
    spritesheet_url: z
      .string()
      .nullable()
      .describe(
        'Frames spread over the clip in a grid (JPEG), signed, valid 24 h; null until succeeded, or when the video’s format gives none',
      ),
    remixed_from: z
      .string()
      .nullable()
      .describe('The video this one remixes (POST /v1/video/generations/{id}/remix); null otherwise'),
    credits_quoted: z.number(),
    credits_charged: z.number(),
    error: z.object({ code: z.string(), message: z.string(), retryable: z.boolean() }).nullable(),
  })
  .meta({ id: 'VideoGeneration' });

/** OpenAI's sizes, as the shape and resolution our video models are asked for. */
const VIDEO_SIZES: Record<string, { aspect: string; quality: string }> = {
  '720x1280': { aspect: '9:16', quality: '720p' },
  '1280x720': { aspect: '16:9', quality: '720p' },
  '1024x1792': { aspect: '9:16', quality: '1080p' },
  '1792x1024': { aspect: '16:9', quality: '1080p' },
};

/** POST /v1/videos as the SDK sends it: multipart/form-data (or JSON); numbers arrive as strings. */
export const videosCreateBody = z
  .object({
    prompt,
    model: modelId.optional().describe('Defaults to sora-2 (priced as sora); any video id of GET /v1/models'),
    seconds: z.coerce.number().int().min(1).max(60).optional().describe('Clamped to the model’s range'),
    size: z
      .enum(Object.keys(VIDEO_SIZES) as ['720x1280'], {
        error: `size must be one of ${Object.keys(VIDEO_SIZES).join(', ')}`,
      })
      .optional(),
    'input_reference[image_url]': imageUrl
      .optional()
      .describe('A reference frame (image-to-video), fetched by the service'),
    input_reference: z
      .unknown()
      .optional()
      .describe('A reference frame: an uploaded image file (multipart), or { image_url }'),
    // Multipart sends numbers as strings.
    deadline_seconds: z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), deadlineSeconds),
    max_credits: z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), maxCredits),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
  })
  .meta({ id: 'VideoCreateRequest' });

const video = z
  .object({
    id: z.string(),
    object: z.literal('video'),
    model: z.string(),
    status: z.enum(['queued', 'in_progress', 'completed', 'failed']),
    progress: z.number().int().min(0).max(100),
    seconds: z.string(),
    size: z.string(),
    prompt: z.string().nullable(),
    created_at: z.number().int(),
    completed_at: z.number().int().nullable(),
    expires_at: z.number().int().nullable(),
    remixed_from_video_id: z
      .string()
      .nullable()
      .describe('The video this one remixes (POST /v1/videos/{id}/remix); null otherwise'),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .meta({ id: 'Video' });

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

const videoList = z
  .object({
    object: z.literal('list'),
    data: z.array(video),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'VideoList' });

const OPENAI_STATUS = { queued: 'queued', running: 'in_progress', succeeded: 'completed', failed: 'failed' } as const;
const URL_LIFETIME_S = 24 * 60 * 60;

function videoOf(g: GenerationView): z.infer<typeof video> {
  const p = g.params;
  const aspect = typeof p.aspect === 'string' ? p.aspect : '16:9';
  const resolution = typeof p.resolution === 'string' ? p.resolution : '720p';
  const size =
    Object.entries(VIDEO_SIZES).find(([, v]) => v.aspect === aspect && v.quality === resolution)?.[0] ??
    (aspect === '9:16' ? '720x1280' : '1280x720');
  const completed = g.finishedAt === null ? null : unixSeconds(g.finishedAt);
  return {
    id: g.id,
    object: 'video',
    model: g.model,
    status: OPENAI_STATUS[g.status],
    // The provider's own progress, or the provider step's estimate (core/generation/view.ts); 100 once completed.
    progress: g.progress,
    seconds: typeof p.seconds === 'number' ? String(p.seconds) : '',
    size,
    prompt: g.prompt,
    created_at: unixSeconds(g.createdAt),
    completed_at: completed,
    expires_at: g.status === 'succeeded' && completed !== null ? completed + URL_LIFETIME_S : null,
    remixed_from_video_id: remixedFrom(g),
    error: g.error && { code: g.error.code, message: g.error.message },
  };
}

function videoGenerationOf(g: GenerationView): z.infer<typeof videoGeneration> {
  return {
    id: g.id,
    object: 'video.generation',
    model: g.model,
    status: g.status,
    duration: Number(g.params.seconds ?? 0),
    created_at: unixSeconds(g.createdAt),
    completed_at: g.finishedAt === null ? null : unixSeconds(g.finishedAt),
    output_url: g.outputUrl === '' ? null : g.outputUrl,
    thumbnail_url: g.thumbnailUrl,
    spritesheet_url: g.spritesheetUrl,
    remixed_from: remixedFrom(g),
    credits_quoted: g.creditsQuoted,
    credits_charged: g.creditsCharged,
    error: g.error,
  };
}

const remixedFrom = (g: GenerationView): string | null =>
  typeof g.params.remixedFrom === 'string' ? g.params.remixedFrom : null;

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
    v: {
      model: string;
      prompt: string;
      seconds: number | undefined;
      reference: string | undefined;
      aspect?: string;
      quality?: string;
    },
  ): Promise<GenerationView> => {
    const { generation } = await inGroupBWords(() =>
      deps.service.submit(
        {
          kind: 'video',
          model: v.model,
          prompt: v.prompt,
          seconds: v.seconds,
          aspect: v.aspect,
          quality: v.quality,
          ...(v.reference ? { imageUrl: v.reference } : {}),
        },
        principal,
        options,
      ),
    );
    return generation;
  };

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
      const [width, height] = IMAGE_SIZES[body.size ?? '1024x1024'];
      const principal = principalOf(request);
      const { generations } = await inGroupBWords(() =>
        deps.service.submitMany(
          { kind: 'image', model: body.model, prompt: body.prompt, width, height, hd: body.quality === 'hd' },
          principal,
          {
            ...submitOptionsOf(request, 'POST /v1/images/generations', body, body.deadline_seconds),
            count: body.n ?? 1,
          },
        ),
      );
      try {
        const done = generations.filter((g) => g.status === 'succeeded');
        if (done.length === 0) {
          const failure = generations.find((g) => g.error)?.error;
          throw new ProviderFailedError(
            failure
              ? `The image could not be generated (${failure.code}): ${failure.message} Nothing was charged.`
              : 'The images are still being generated; they will be listed at GET /api/v1/generations.',
          );
        }
        const data = await Promise.all(
          done.map(async (g) => {
            if (body.response_format !== 'b64_json')
              return { url: g.outputUrl, revised_prompt: null, generation_id: g.id };
            const { file } = await deps.service.output(principal, g.id);
            if (!file)
              throw new ProviderFailedError('The image file could not be read; retry with response_format url.');
            return { b64_json: file.data.toString('base64'), revised_prompt: null, generation_id: g.id };
          }),
        );
        const charged = done.reduce((sum, g) => sum + g.creditsCharged * 1000, 0) / 1000;
        return { created: unixSeconds(generations[0]!.createdAt), data, credits_charged: charged };
      } catch (err) {
        throw markAfterAdmission(err);
      }
    },
  );

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
      const reference = body.image_url ?? undefined;
      const options = submitOptionsOf(request, 'POST /v1/video/generations', body, body.deadline_seconds);
      return videoGenerationOf(
        await submitVideo(principalOf(request), options, {
          model: body.model,
          prompt: body.prompt,
          seconds: body.duration ?? 5,
          reference,
        }),
      );
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

  route.post(
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
      const shape = body.size === undefined ? {} : VIDEO_SIZES[body.size]!;
      // The upload is in the request: its hash stands for it under an Idempotency-Key.
      const keyed = {
        ...body,
        input_reference: file ? createHash('sha256').update(file).digest('hex') : body.input_reference,
      };
      const options = { ...submitOptionsOf(request, 'POST /v1/videos', keyed, body.deadline_seconds), inputFile: file };
      return videoOf(
        await submitVideo(principalOf(request), options, {
          model: body.model ?? 'sora-2',
          prompt: body.prompt,
          seconds: body.seconds,
          reference,
          ...shape,
        }),
      );
    },
  );

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
