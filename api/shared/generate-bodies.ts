import { z } from 'zod';
import { UPSCALE_SCALES } from '../../core/generation/params';
import { IMAGE_MAX_SIDE } from '../../core/catalogue/pricing';
import { safeText } from '../../core/text';
import { GENERATION_KINDS } from '../../core/vocabulary';
import type { GenerationRequest } from '../../service/generation/requests';
import type { ChatMessage } from '../../core/generation/params';
import {
  chatPrompt,
  deadlineSeconds,
  guidancePrompt,
  imageUrl,
  MAX_MEDIA_PROMPT_CHARS,
  spendCapField,
  mediaPrompt,
  modelId,
  callbackEventsField,
  callbackOption,
  callbackUrlField,
} from './fields';
import { customerId } from './customers';

/**
 * The two shapes of a generate request, each parsed into the service's one request type. Group A's
 * snake_case body is also what the MCP tools take; group C's camelCase body is also what the
 * dashboard's playground prices. They live here, not in a door, because doors never import doors.
 * Every shape is strict: a field it does not know is a 400 naming it, never silently dropped (a
 * misspelled cap or deadline would otherwise run without one).
 */

/** Both shapes: an upscale's factor and guidance, and one answer for a kind neither knows. */
const guidance = guidancePrompt.optional().describe('Optional guidance for the upscaler');
const scale = z.union(UPSCALE_SCALES.map((s) => z.literal(s)) as [z.ZodLiteral<2>, z.ZodLiteral<4>], {
  error: 'scale must be 2 or 4',
});
const unknownKind = { error: () => `kind must be one of ${GENERATION_KINDS.map((k) => `'${k}'`).join(', ')}` };

// ---------------------------------------------------------------------------------------------
// snake_case: POST /api/v1/generate (group A) and POST /api/v1/quote; the MCP media tools
// ---------------------------------------------------------------------------------------------

/** Group A's body for POST /api/v1/generate: the spec's fields plus what each kind needs, snake_case. */
const model = modelId.describe('A model id or alias from GET /api/v1/models');
const prompt = mediaPrompt.describe('Checked by the safety guard before pricing');
const quality = safeText({ max: 50 }).optional();
const aspect = safeText({ max: 20 }).optional().describe('e.g. 16:9; snapped to what the model supports');
const side = z.number().int().min(1).max(8192);
const max_credits = spendCapField('max_credits');
const customer = customerId('customer').optional();
/** A callback on the job, as Replicate names it (group A is Replicate-like: Prefer, Cancel-After). */
const webhook = callbackUrlField('webhook');
const webhook_events_filter = callbackEventsField('webhook_events_filter');

const chatMessage = z.strictObject({
  role: z.enum(['system', 'user', 'assistant']),
  content: safeText({ label: 'content' }),
});

/** The image and video branches of the body; the MCP tools take the same fields. */
export const groupAImageBody = z.strictObject({
  kind: z.literal('image'),
  model,
  prompt,
  quality,
  aspect,
  width: side
    .optional()
    .describe(`With height: the shape (snapped like aspect) and size (long side ${IMAGE_MAX_SIDE} px at most)`),
  height: side.optional(),
  input_images: z
    .array(imageUrl('input_images'))
    .min(1)
    .max(16)
    .optional()
    .describe(
      'An edit: the images to edit, by URL (the first is edited, the others guide it); models listing features: ["edit"] take them',
    ),
  mask_url: imageUrl('mask_url').optional().describe('An edit: where to edit, the transparent pixels of this image'),
  deadline_seconds: deadlineSeconds,
  max_credits,
  customer,
  webhook,
  webhook_events_filter,
});
export const groupAVideoBody = z.strictObject({
  kind: z.literal('video'),
  model,
  prompt,
  aspect,
  quality: quality.describe('480p, 720p or 1080p; falls back to the model default'),
  seconds: z.number().finite().optional().describe('Clamped to the model range'),
  deadline_seconds: deadlineSeconds,
  max_credits,
  customer,
  webhook,
  webhook_events_filter,
});

export const groupAGenerateBody = z
  .discriminatedUnion(
    'kind',
    [
      groupAImageBody,
      groupAVideoBody,
      z.strictObject({
        kind: z.literal('chat'),
        model: model.optional().describe('Omitted or auto: the service picks the model'),
        prompt: chatPrompt.optional().describe('A single user message; or send messages'),
        messages: z.array(chatMessage).min(1).max(1000).optional().describe('The conversation; or send prompt'),
        max_tokens: z.number().int().min(1).max(32_768).optional().describe('Longest reply, in tokens'),
        deadline_seconds: deadlineSeconds,
        max_credits,
        customer,
        webhook,
        webhook_events_filter,
      }),
      z.strictObject({
        kind: z.literal('upscale'),
        model: model.optional().describe('Defaults to upscale'),
        image_url: imageUrl('image_url').describe('The image to upscale: PNG, JPEG or WebP, fetched by the service'),
        scale,
        prompt: guidance,
        deadline_seconds: deadlineSeconds,
        max_credits,
        customer,
        webhook,
        webhook_events_filter,
      }),
    ],
    unknownKind,
  )
  .superRefine((body, ctx) => {
    if (body.kind === 'chat' && (body.prompt === undefined) === (body.messages === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['messages'], message: 'send either prompt or messages (exactly one)' });
    }
    if (body.kind === 'image' && (body.width === undefined) !== (body.height === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [body.width === undefined ? 'width' : 'height'],
        message: 'width and height go together',
      });
    }
    if (body.kind === 'image' && body.mask_url !== undefined && body.input_images === undefined) {
      ctx.addIssue({ code: 'custom', path: ['mask_url'], message: 'a mask goes with the input_images it edits' });
    }
  })
  .meta({
    id: 'GenerateRequest',
    examples: [
      { kind: 'image', model: 'image-nano-banana', prompt: 'a fox in the snow', width: 1536, height: 1024 },
      {
        kind: 'video',
        model: 'seedance-lite',
        prompt: 'a paper boat on a stream',
        seconds: 6,
        quality: '480p',
        aspect: '9:16',
      },
      {
        kind: 'chat',
        model: 'chat-sonnet',
        messages: [
          { role: 'system', content: 'Answer briefly.' },
          { role: 'user', content: 'What is a credit?' },
        ],
        max_tokens: 64,
      },
    ],
  });

export type GroupAGenerateBody = z.infer<typeof groupAGenerateBody>;

/** The callback option of a snake_case body (group A, its remix, the MCP tools): Replicate's `webhook` and filter. */
export const groupACallbackOption = (body: {
  webhook?: string | undefined;
  webhook_events_filter?: string[] | undefined;
}) =>
  callbackOption(body.webhook, body.webhook_events_filter, { param: 'webhook', eventsParam: 'webhook_events_filter' });

/** The callback option of group C's camelCase body. */
export const groupCCallbackOption = (body: {
  callbackUrl?: string | undefined;
  callbackEvents?: string[] | undefined;
}) => callbackOption(body.callbackUrl, body.callbackEvents, { param: 'callbackUrl', eventsParam: 'callbackEvents' });

export function groupARequestOf(body: GroupAGenerateBody): GenerationRequest {
  switch (body.kind) {
    case 'image':
      return {
        kind: 'image',
        model: body.model,
        prompt: body.prompt,
        quality: body.quality,
        aspect: body.aspect,
        width: body.width,
        height: body.height,
        ...(body.input_images
          ? {
              edit: {
                images: body.input_images.map((url) => ({ url })),
                ...(body.mask_url ? { mask: { url: body.mask_url } } : {}),
              },
            }
          : {}),
      };
    case 'video':
      return {
        kind: 'video',
        model: body.model,
        prompt: body.prompt,
        quality: body.quality,
        aspect: body.aspect,
        seconds: body.seconds,
      };
    case 'chat': {
      const messages: ChatMessage[] = body.messages ?? [{ role: 'user', content: body.prompt ?? '' }];
      return { kind: 'chat', model: body.model, messages, maxTokens: body.max_tokens };
    }
    case 'upscale':
      return { kind: 'upscale', model: body.model, imageUrl: body.image_url, scale: body.scale, prompt: body.prompt };
  }
}

// ---------------------------------------------------------------------------------------------
// camelCase: POST /api/generate (group C); the dashboard's quote
// ---------------------------------------------------------------------------------------------

/** Group C's body for POST /api/generate: camelCase, one `kind` per shape (spec, group C). */
const common = {
  model: modelId.optional(),
  quality: quality.describe('Image: model-specific; video: 480p, 720p or 1080p. Falls back to the model default'),
  aspect,
  // Accepted and ignored by design: the model's default resolution is used, with its price.
  resolution: z.unknown().optional().describe('Accepted and ignored: the model default is used, with its price'),
  deadlineSeconds,
  maxCredits: spendCapField('maxCredits'),
  customer,
  callbackUrl: callbackUrlField('callbackUrl'),
  callbackEvents: callbackEventsField('callbackEvents'),
};
const groupCPrompt = mediaPrompt.describe(
  `Checked by the safety guard before pricing; at most ${MAX_MEDIA_PROMPT_CHARS} characters`,
);

export const groupCGenerateBody = z
  .discriminatedUnion(
    'kind',
    [
      z.strictObject({ ...common, kind: z.literal('image'), prompt: groupCPrompt }),
      z.strictObject({
        ...common,
        kind: z.literal('video'),
        prompt: groupCPrompt,
        seconds: z.number().finite().optional().describe('Clamped to the model range'),
      }),
      // Chat prompts of any length are accepted and capped server-side to what the model takes.
      z.strictObject({
        ...common,
        kind: z.literal('chat'),
        prompt: chatPrompt.describe('Long input is capped to what the model accepts'),
      }),
      z.strictObject({
        kind: z.literal('upscale'),
        model: common.model,
        resolution: common.resolution,
        imageUrl: imageUrl('imageUrl').describe('The image to upscale (PNG, JPEG or WebP)'),
        scale,
        prompt: guidance,
        deadlineSeconds,
        maxCredits: common.maxCredits,
        customer,
        callbackUrl: common.callbackUrl,
        callbackEvents: common.callbackEvents,
      }),
    ],
    unknownKind,
  )
  .meta({
    id: 'LegacyGenerateRequest',
    examples: [
      { kind: 'image', model: 'flux', prompt: 'a lighthouse at dusk' },
      { kind: 'video', model: 'kling', prompt: 'waves rolling onto a beach', seconds: 10, quality: '1080p' },
      { kind: 'chat', prompt: 'Write a haiku about the tide' },
    ],
  });

type GroupCGenerateBody = z.infer<typeof groupCGenerateBody>;

export function groupCRequestOf(body: GroupCGenerateBody): GenerationRequest {
  switch (body.kind) {
    case 'image':
      return { kind: 'image', model: body.model, prompt: body.prompt, quality: body.quality, aspect: body.aspect };
    case 'video':
      return {
        kind: 'video',
        model: body.model,
        prompt: body.prompt,
        quality: body.quality,
        aspect: body.aspect,
        seconds: body.seconds,
      };
    case 'chat':
      return { kind: 'chat', model: body.model, messages: [{ role: 'user', content: body.prompt }] };
    case 'upscale':
      return { kind: 'upscale', model: body.model, imageUrl: body.imageUrl, scale: body.scale, prompt: body.prompt };
  }
}

// ---------------------------------------------------------------------------------------------
// A remix (group A's POST /api/v1/generations/{id}/remix, group B's two remix routes)
// ---------------------------------------------------------------------------------------------

/** The body of every remix route: only the new prompt; model, seconds, resolution and aspect are the source's. */
export const remixBody = z
  .strictObject({
    prompt: mediaPrompt.describe('The new prompt; checked by the safety guard before pricing'),
    max_credits,
    customer,
    webhook,
    webhook_events_filter,
  })
  .meta({ id: 'RemixRequest', examples: [{ prompt: 'the same waves at night' }] });

// ---------------------------------------------------------------------------------------------
// An extension or edit of a video (group A's POST /api/v1/generations/{id}/extend and …/edit)
// ---------------------------------------------------------------------------------------------

/** Seconds to add to a video: a whole number above zero, clamped to the model's range when priced. */
export const extensionSeconds = z
  .number({ error: 'seconds must be a whole number of seconds above 0' })
  .int({ error: 'seconds must be a whole number of seconds above 0' })
  .min(1, { error: 'seconds must be a whole number of seconds above 0' })
  .max(3600, { error: 'seconds must be at most 3600 (and is clamped to the model’s range)' });

/** Group A's extension: the prompt of what comes next, and how many seconds of it. */
export const extendBody = z
  .strictObject({
    prompt: mediaPrompt.describe('What happens next; checked by the safety guard before pricing'),
    seconds: extensionSeconds.describe(
      'Seconds to add, clamped to the model’s range; priced as that many seconds of the source’s model at its resolution',
    ),
    max_credits,
    customer,
    webhook,
    webhook_events_filter,
  })
  .meta({ id: 'ExtendRequest', examples: [{ prompt: 'the waves calm down at dusk', seconds: 5 }] });

/** Group A's edit: only the prompt; the source's length, model, resolution and aspect are kept. */
export const editBody = z
  .strictObject({
    prompt: mediaPrompt.describe('How to change the video; checked by the safety guard before pricing'),
    max_credits,
    customer,
    webhook,
    webhook_events_filter,
  })
  .meta({ id: 'VideoEditRequest', examples: [{ prompt: 'the same waves under snow' }] });
