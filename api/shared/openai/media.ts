import { z } from 'zod';
import { ProviderFailedError } from '../../../core/errors';
import type { GenerationView } from '../../../core/generation/view';
import { IMAGE_OUTPUT_FORMATS } from '../../../core/media/output-format';
import type { GenerationRequest } from '../../../service/generation/requests';
import { failedRunError } from './failures';
import {
  callbackEventsField,
  callbackUrlField,
  deadlineSeconds,
  imageUrl as httpImageUrl,
  mediaPrompt,
  modelId,
  spendCapField,
} from '../fields';
import { unixSeconds } from './words';
import { openAiEndUser } from '../customers';

/**
 * OpenAI's images and videos as group B takes and answers them: the image generation body, the
 * images response, the two spellings of a video. Group B's routes and a batch's image and video
 * lines share them, so a line's result is what the route would have answered. Image edits, which
 * a batch line cannot ask for, are group B's alone (api/group-b/image-edits.ts).
 */

export const maxCredits = spendCapField('max_credits');
/** A callback URL on the job, as OpenRouter's video API names it; group B's submits all take it. */
export const callbackFields = {
  callback_url: callbackUrlField('callback_url').nullable(),
  callback_events: callbackEventsField('callback_events').nullable(),
};
export const endUser = openAiEndUser();

export const prompt = mediaPrompt.describe('Checked by the safety guard before pricing');
// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

export const IMAGE_SIZES = { '1024x1024': [1024, 1024], '1792x1024': [1792, 1024], '1024x1792': [1024, 1792] } as const;

export const responseFormat = z
  .enum(['url', 'b64_json'], { error: "response_format must be 'url' or 'b64_json'" })
  .nullish()
  .describe(
    'b64_json (the default for gpt-image-* models, as OpenAI answers them), or url (signed, valid 24 h; the default for others)',
  );
export const outputFormat = z
  .enum(IMAGE_OUTPUT_FORMATS, { error: "output_format must be 'png', 'jpeg' or 'webp'" })
  .nullish()
  .describe('The image’s encoding (png by default); an image that cannot be given in it is not charged');

/** OpenAI answers gpt-image models in base64 when no response_format is asked (and clients rely on it); others by URL. */
export const answerFormatOf = (model: string, asked: 'url' | 'b64_json' | null | undefined): 'url' | 'b64_json' =>
  asked ?? (/^gpt-image/.test(model) ? 'b64_json' : 'url');

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
    response_format: responseFormat,
    output_format: outputFormat,
    output_compression: z.number().int().min(0).max(100).nullish().describe('Accepted and ignored'),
    background: z.enum(['transparent', 'opaque', 'auto']).nullish().describe('Accepted and ignored'),
    moderation: z.enum(['low', 'auto']).nullish().describe('Accepted and ignored'),
    style: z.enum(['vivid', 'natural']).nullish().describe('Accepted and ignored'),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    deadline_seconds: deadlineSeconds.nullable(),
    max_credits: maxCredits.nullable(),
    ...callbackFields,
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

export const imagesResponse = z
  .object({
    created: z.number().int(),
    data: z.array(
      z.object({
        url: z.string().optional().describe('Signed, valid 24 h'),
        b64_json: z.string().optional(),
        generation_id: z.string().describe('The image’s generation (groups A and C show it too)'),
      }),
    ),
    credits_charged: z.number().describe('Credits charged for these images'),
  })
  .meta({ id: 'ImagesResponse' });

/** Multipart sends numbers as strings. */
export const formNumber = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() !== '' ? Number(v) : v), schema);
// ---------------------------------------------------------------------------------------------
// Video: the spec's /v1/video/generations and OpenAI's /v1/videos, one generation either way
// ---------------------------------------------------------------------------------------------

export const imageUrl = httpImageUrl('image_url');

export const videoGenerationBody = z
  .object({
    model: modelId.describe('kling-2.1-pro, wan-2.1, minimax-video-01 (or any video id of GET /v1/models)'),
    prompt,
    duration: z
      .union([z.literal(5), z.literal(10)], { error: 'duration must be 5 or 10' })
      .nullish()
      .describe('Seconds: 5 or 10 (default 5), clamped to the model’s range'),
    image_url: imageUrl.nullish().describe('A reference frame (image-to-video), fetched by the service'),
    previous_job_id: z
      .string()
      .nullish()
      .describe(
        'Extends that succeeded video of the account by `duration` seconds (its model, resolution and aspect kept) instead of starting a new one, as OpenRouter takes it',
      ),
    deadline_seconds: deadlineSeconds.nullable(),
    max_credits: maxCredits.nullable(),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    ...callbackFields,
  })
  .meta({
    id: 'VideoGenerationRequest',
    examples: [{ model: 'kling-2.1-pro', prompt: 'waves rolling onto a beach', duration: 5 }],
  });

export const videoGeneration = z
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
      .describe(
        'The video this one is made from: remixed (POST /v1/video/generations/{id}/remix), extended or edited (POST /v1/videos/extensions, /v1/videos/edits); null otherwise',
      ),
    credits_quoted: z.number(),
    credits_charged: z.number(),
    error: z.object({ code: z.string(), message: z.string(), retryable: z.boolean() }).nullable(),
  })
  .meta({ id: 'VideoGeneration' });

/** OpenAI's sizes, as the shape and resolution our video models are asked for. */
export const VIDEO_SIZES: Record<string, { aspect: string; quality: string }> = {
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
    deadline_seconds: formNumber(deadlineSeconds),
    max_credits: formNumber(maxCredits),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    ...callbackFields,
  })
  .meta({ id: 'VideoCreateRequest' });

export const video = z
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
      .describe(
        'The video this one is made from: remixed (POST /v1/videos/{id}/remix), extended (POST /v1/videos/extensions) or edited (POST /v1/videos/edits); null otherwise',
      ),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
  })
  .meta({ id: 'Video' });

const OPENAI_STATUS = { queued: 'queued', running: 'in_progress', succeeded: 'completed', failed: 'failed' } as const;
const URL_LIFETIME_S = 24 * 60 * 60;

export function videoOf(g: GenerationView): z.infer<typeof video> {
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
    // An extension's is its whole length, as OpenAI gave it: the source's seconds and the added ones.
    seconds: typeof lengthOf(g) === 'number' ? String(lengthOf(g)) : '',
    size,
    prompt: g.prompt,
    created_at: unixSeconds(g.createdAt),
    completed_at: completed,
    expires_at: g.status === 'succeeded' && completed !== null ? completed + URL_LIFETIME_S : null,
    remixed_from_video_id: remixedFrom(g),
    error: g.error && { code: g.error.code, message: g.error.message },
  };
}

export function videoGenerationOf(g: GenerationView): z.infer<typeof videoGeneration> {
  return {
    id: g.id,
    object: 'video.generation',
    model: g.model,
    status: g.status,
    duration: lengthOf(g) ?? 0,
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

/** The video this one is made from (remixed, extended or edited): OpenAI's shapes have one field for it. */
const remixedFrom = (g: GenerationView): string | null =>
  g.params.remixedFrom ?? g.params.extendedFrom ?? g.params.editedFrom ?? null;

/** A video's length: an extension's whole file, else the seconds it ran. */
const lengthOf = (g: GenerationView): number | undefined => g.params.stitchedSeconds ?? g.params.seconds;

/** The service's request for an images body, and how many images (each a generation of its own). */
export function imageRequestOf(body: z.infer<typeof imageGenerationBody>): {
  request: Extract<GenerationRequest, { kind: 'image' }>;
  count: number;
} {
  const [width, height] = IMAGE_SIZES[body.size ?? '1024x1024'];
  return {
    request: {
      kind: 'image',
      model: body.model,
      prompt: body.prompt,
      width,
      height,
      hd: body.quality === 'hd',
      outputFormat: body.output_format ?? undefined,
    },
    count: body.n ?? 1,
  };
}

/**
 * The images response for a request's generations once they have ended: the images made (a URL,
 * or the file's bytes in base64 read through `readFile`) and what they were charged. None made is
 * the request's failure (nothing was charged). The images were stored, and read back, before their
 * charge (activities/generation/provider.ts); a read that fails now is tried again before giving up.
 */
export async function imagesResponseOf(
  generations: readonly GenerationView[],
  format: 'url' | 'b64_json',
  readFile: (generationId: string) => Promise<Buffer | undefined>,
): Promise<z.infer<typeof imagesResponse>> {
  const done = generations.filter((g) => g.status === 'succeeded');
  if (done.length === 0) throw failedRunError('image', generations.find((g) => g.error)?.error);
  const data = await Promise.all(
    done.map(async (g) => {
      if (format !== 'b64_json') return { url: g.outputUrl, generation_id: g.id };
      for (let attempt = 1; ; attempt++) {
        const file = await readFile(g.id);
        if (file) return { b64_json: file.toString('base64'), generation_id: g.id };
        if (attempt === 3)
          throw new ProviderFailedError(
            `The image file of ${g.id} could not be read now; it is at GET /api/v1/generations/${g.id}.`,
          );
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }),
  );
  const charged = done.reduce((sum, g) => sum + g.creditsCharged * 1000, 0) / 1000;
  return { created: unixSeconds(generations[0]!.createdAt), data, credits_charged: charged };
}

/** `POST /v1/video/generations`'s body as the service's request (`image_url`: a reference frame). */
export function videoGenerationRequestOf(
  body: z.infer<typeof videoGenerationBody>,
): Extract<GenerationRequest, { kind: 'video' }> {
  return {
    kind: 'video',
    model: body.model,
    prompt: body.prompt,
    seconds: body.duration ?? 5,
    ...(body.image_url ? { imageUrl: body.image_url } : {}),
  };
}

/** `POST /v1/videos`'s body as the service's request, its reference frame (a URL) given apart. */
export function videosRequestOf(
  body: z.infer<typeof videosCreateBody>,
  reference: string | undefined,
): Extract<GenerationRequest, { kind: 'video' }> {
  const shape = body.size === undefined ? {} : VIDEO_SIZES[body.size]!;
  return {
    kind: 'video',
    model: body.model ?? 'sora-2',
    prompt: body.prompt,
    seconds: body.seconds,
    ...shape,
    ...(reference ? { imageUrl: reference } : {}),
  };
}
