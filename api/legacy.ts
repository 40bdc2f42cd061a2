import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { UPSCALE_SCALES } from '../core/catalogue';
import { safeText } from '../core/text';
import type { GenerationRequest } from '../service/requests';
import type { GenerationService } from '../service/generation-service';
import { recordOf } from '../service/records';
import { principalOf, requireKeyOrSession } from './auth';
import type { SessionAuthDeps } from './auth';
import { chatPrompt, generateHeaders, generateOptionsOf, guidancePrompt, imageUrl, MAX_MEDIA_PROMPT_CHARS, mediaPrompt, modelId } from './fields';
import { credits, errorResponses, generationRecord, idParams } from './schemas';

/** Group C's body for POST /api/generate: camelCase, one `kind` per shape (spec, group C). */
const common = {
  model: modelId.optional(),
  quality: safeText({ max: 50 }).optional().describe('Image: model-specific; video: 480p, 720p or 1080p. Falls back to the model default'),
  aspect: safeText({ max: 20 }).optional().describe('e.g. 16:9; snapped to what the model supports'),
  // Accepted and ignored by design: the model's default resolution is used, with its price.
  resolution: z.unknown().optional().describe('Accepted and ignored: the model default is used, with its price'),
};
const prompt = mediaPrompt.describe(`Checked by the safety guard before pricing; at most ${MAX_MEDIA_PROMPT_CHARS} characters`);

export const legacyGenerateBody = z
  .discriminatedUnion(
    'kind',
    [
      z.object({ ...common, kind: z.literal('image'), prompt }),
      z.object({ ...common, kind: z.literal('video'), prompt, seconds: z.number().finite().optional().describe('Clamped to the model range') }),
      // Chat prompts of any length are accepted and capped server-side to what the model takes.
      z.object({ ...common, kind: z.literal('chat'), prompt: chatPrompt.describe('Long input is capped to what the model accepts') }),
      z.object({
        kind: z.literal('upscale'),
        model: common.model,
        imageUrl: imageUrl('imageUrl').describe('The image to upscale (PNG, JPEG or WebP)'),
        scale: z.union(UPSCALE_SCALES.map((s) => z.literal(s)) as [z.ZodLiteral<2>, z.ZodLiteral<4>], { error: 'scale must be 2 or 4' }),
        prompt: guidancePrompt.optional().describe('Optional guidance for the upscaler'),
      }),
    ],
    { error: () => "kind must be one of 'image', 'video', 'chat', 'upscale'" },
  )
  .meta({
    id: 'LegacyGenerateRequest',
    examples: [
      { kind: 'image', model: 'flux', prompt: 'a lighthouse at dusk' },
      { kind: 'video', model: 'kling', prompt: 'waves rolling onto a beach', seconds: 10, quality: '1080p' },
      { kind: 'chat', prompt: 'Write a haiku about the tide' },
    ],
  });

type LegacyGenerateBody = z.infer<typeof legacyGenerateBody>;

export function toRequest(body: LegacyGenerateBody): GenerationRequest {
  switch (body.kind) {
    case 'image':
      return { kind: 'image', model: body.model, prompt: body.prompt, quality: body.quality, aspect: body.aspect };
    case 'video':
      return { kind: 'video', model: body.model, prompt: body.prompt, quality: body.quality, aspect: body.aspect, seconds: body.seconds };
    case 'chat':
      return { kind: 'chat', model: body.model, messages: [{ role: 'user', content: body.prompt }] };
    case 'upscale':
      return { kind: 'upscale', model: body.model, imageUrl: body.imageUrl, scale: body.scale, prompt: body.prompt };
  }
}

const generationResponse = z.object({ generation: generationRecord });
/** Group C takes an API key or a dashboard session (spec, Authentication 4). */
const security: Record<string, string[]>[] = [{ apiKey: [] }, { session: [] }];

/** Group C: per-kind generate, polling and credits, without a version prefix. */
export const legacyRoutes: FastifyPluginAsyncZod<SessionAuthDeps & { service: GenerationService }> = async (app, deps) => {
  app.addHook('onRequest', requireKeyOrSession(deps));

  app.post('/api/generate', {
    schema: {
      operationId: 'legacyGenerate',
      tags: ['Group C'],
      summary: 'Generate an image, video, chat reply or upscale',
      description: 'Images and chat replies finish within the call (unless `Prefer: respond-async`); videos and upscales answer `queued` or `running` at once and are polled with GET /api/generate/{id}. Every run is priced before it starts and the quote is the charge.',
      security,
      body: legacyGenerateBody,
      headers: generateHeaders,
      response: { 200: generationResponse, ...errorResponses(400, 401, 402, 403, 409, 413, 429, 500, 503) },
    },
  }, async (request, reply) => {
    const options = generateOptionsOf(request, 'C', 'POST /api/generate');
    const { generation } = await deps.service.submit(toRequest(request.body), principalOf(request), options);
    if (options.respondAsync) reply.header('Preference-Applied', 'respond-async');
    return { generation: recordOf(generation) };
  });

  app.get('/api/generate/:id', {
    schema: {
      operationId: 'legacyGetGeneration',
      tags: ['Group C'],
      summary: 'Poll a generation',
      security,
      params: idParams,
      response: { 200: generationResponse, ...errorResponses(401, 404, 429, 500, 503) },
    },
  }, async (request) => ({ generation: recordOf(await deps.service.get(principalOf(request), request.params.id)) }));

  app.get('/api/credits', {
    schema: {
      operationId: 'legacyGetCredits',
      tags: ['Group C'],
      summary: 'The credit balance and the free chat allowance',
      security,
      response: { 200: credits, ...errorResponses(401, 429, 500, 503) },
    },
  }, async (request) => {
    const { balance, holdsActive, trial } = await deps.service.balance(principalOf(request));
    return { balance, holdsActive, trial };
  });
};
