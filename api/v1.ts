import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { UPSCALE_SCALES } from '../core/catalogue';
import { IMAGE_MAX_SIDE } from '../core/pricing';
import { safeText } from '../core/text';
import type { GenerationService } from '../service/generation-service';
import { modelListing } from '../service/model-list';
import { recordOf } from '../service/records';
import type { GenerationView } from '../service/records';
import type { ChatMessage, GenerationRequest } from '../service/requests';
import { principalOf, requireApiKey } from './auth';
import type { AuthDeps } from './auth';
import { inDoorWords } from './errors';
import { chatPrompt, generateHeaders, generateOptionsOf, guidancePrompt, imageUrl, mediaPrompt, modelId } from './fields';
import { balance, errorResponses, generation, idParams, quote } from './schemas';
import { GENERATION_KINDS, GENERATION_STATUSES } from '../core/vocabulary';

/** Group A's body for POST /api/v1/generate: the spec's fields plus what each kind needs, snake_case. */
const model = modelId.describe('A model id or alias from GET /api/v1/models');
const prompt = mediaPrompt.describe('Checked by the safety guard before pricing');
const quality = safeText({ max: 50 }).optional();
const aspect = safeText({ max: 20 }).optional().describe('e.g. 16:9; snapped to what the model supports');
const side = z.number().int().min(1).max(8192);

const chatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: safeText({ label: 'content' }),
});

/** The image and video branches of the body; the MCP tools take the same fields. */
export const v1ImageBody = z.object({
  kind: z.literal('image'), model, prompt, quality, aspect,
  width: side.optional().describe(`With height: the shape (snapped like aspect) and size (long side ${IMAGE_MAX_SIDE} px at most)`),
  height: side.optional(),
});
export const v1VideoBody = z.object({
  kind: z.literal('video'), model, prompt, aspect,
  quality: quality.describe('480p, 720p or 1080p; falls back to the model default'),
  seconds: z.number().finite().optional().describe('Clamped to the model range'),
});

export const v1GenerateBody = z
  .discriminatedUnion(
    'kind',
    [
      v1ImageBody,
      v1VideoBody,
      z.object({
        kind: z.literal('chat'),
        model: model.optional().describe('Omitted or auto: the service picks the model'),
        prompt: chatPrompt.optional().describe('A single user message; or send messages'),
        messages: z.array(chatMessage).min(1).max(1000).optional().describe('The conversation; or send prompt'),
        max_tokens: z.number().int().min(1).max(32_768).optional().describe('Longest reply, in tokens'),
      }),
      z.object({
        kind: z.literal('upscale'),
        model: model.optional().describe('Defaults to upscale'),
        image_url: imageUrl('image_url').describe('The image to upscale: PNG, JPEG or WebP, fetched by the service'),
        scale: z.union(UPSCALE_SCALES.map((s) => z.literal(s)) as [z.ZodLiteral<2>, z.ZodLiteral<4>], { error: 'scale must be 2 or 4' }),
        prompt: guidancePrompt.optional().describe('Optional guidance for the upscaler'),
      }),
    ],
    { error: () => "kind must be one of 'image', 'video', 'chat', 'upscale'" },
  )
  .superRefine((body, ctx) => {
    if (body.kind === 'chat' && (body.prompt === undefined) === (body.messages === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['messages'], message: 'send either prompt or messages (exactly one)' });
    }
    if (body.kind === 'image' && (body.width === undefined) !== (body.height === undefined)) {
      ctx.addIssue({ code: 'custom', path: [body.width === undefined ? 'width' : 'height'], message: 'width and height go together' });
    }
  })
  .meta({
    id: 'GenerateRequest',
    examples: [
      { kind: 'image', model: 'image-nano-banana', prompt: 'a fox in the snow', width: 1536, height: 1024 },
      { kind: 'video', model: 'seedance-lite', prompt: 'a paper boat on a stream', seconds: 6, quality: '480p', aspect: '9:16' },
      { kind: 'chat', model: 'chat-sonnet', messages: [{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: 'What is a credit?' }], max_tokens: 64 },
    ],
  });

export type V1GenerateBody = z.infer<typeof v1GenerateBody>;

export function toRequest(body: V1GenerateBody): GenerationRequest {
  switch (body.kind) {
    case 'image':
      return { kind: 'image', model: body.model, prompt: body.prompt, quality: body.quality, aspect: body.aspect, width: body.width, height: body.height };
    case 'video':
      return { kind: 'video', model: body.model, prompt: body.prompt, quality: body.quality, aspect: body.aspect, seconds: body.seconds };
    case 'chat': {
      const messages: ChatMessage[] = body.messages ?? [{ role: 'user', content: body.prompt ?? '' }];
      return { kind: 'chat', model: body.model, messages, maxTokens: body.max_tokens };
    }
    case 'upscale':
      return { kind: 'upscale', model: body.model, imageUrl: body.image_url, scale: body.scale, prompt: body.prompt };
  }
}

/** The service names request fields as the shared request type does; group A spells some in snake_case. */
const GROUP_A_PARAMS: Record<string, string> = { imageUrl: 'image_url', maxTokens: 'max_tokens' };

/** A generation as group A shows it. */
export function generationOf(g: GenerationView): z.infer<typeof generation> {
  return {
    ...recordOf(g),
    creditsQuoted: g.creditsQuoted,
    text: g.text,
    params: g.params,
    createdAt: g.createdAt.toISOString(),
    startedAt: g.startedAt?.toISOString() ?? null,
    finishedAt: g.finishedAt?.toISOString() ?? null,
  };
}

const kind = z.enum(GENERATION_KINDS as ['image', 'video', 'chat', 'upscale']);
export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  kind: kind.optional(),
  status: z.enum(GENERATION_STATUSES as ['queued', 'running', 'succeeded', 'failed']).optional(),
});
export const generationList = z
  .object({ data: z.array(generation), next_cursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last page') })
  .meta({ id: 'GenerationList' });

export const modelEntry = z
  .object({
    id: z.string(),
    kind,
    aliases: z.array(z.string()).describe('Other ids accepted by groups A and C'),
    openaiIds: z.array(z.string()).describe('Group B ids priced as this model (accepted by groups A and B)'),
    unit: z.enum(['image', 'second', 'reply', '1k_output_tokens']).describe('What one price unit buys'),
    price: z.number().nullable().describe('Credits per unit, when the price has one value'),
    prices: z.record(z.string(), z.number().nullable()).nullable().describe('Credits per unit by resolution (video; null: not offered) or by factor (upscale)'),
    seconds: z.object({ min: z.number(), max: z.number(), default: z.number() }).nullable(),
    defaults: z.record(z.string(), z.union([z.string(), z.number()])),
    options: z.record(z.string(), z.array(z.union([z.string(), z.number()]))),
  })
  .meta({ id: 'Model' });

const security = [{ apiKey: [] }];
const tags = ['Group A'];

/** Group A: the unified API under /api/v1. */
export const v1Routes: FastifyPluginAsyncZod<AuthDeps & { service: GenerationService }> = async (app, deps) => {
  // Public: no key, no rate limit (it reads nothing of an account).
  app.get('/api/v1/models', {
    schema: {
      operationId: 'listModels',
      tags,
      summary: 'Every model with its unit, prices, seconds range and defaults',
      security: [],
      querystring: z.object({ kind: kind.optional() }),
      response: { 200: z.object({ data: z.array(modelEntry) }), ...errorResponses(400) },
    },
  }, async (request) => ({ data: modelListing(request.query.kind) }));

  await app.register(async (keyed) => {
    keyed.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
    const route = keyed.withTypeProvider<ZodTypeProvider>();

    route.post('/api/v1/generate', {
      schema: {
        operationId: 'generate',
        tags,
        summary: 'Generate an image, video, chat reply or upscale',
        description:
          'Needs the scope generate:<kind>. Images and chat replies finish within the call and answer 200 (unless `Prefer: respond-async`); ' +
          'videos and upscales answer 202 with `queued` or `running` and a Location to poll.',
        security,
        body: v1GenerateBody,
        headers: generateHeaders,
        response: {
          200: generation.describe('Finished (succeeded or failed) within the call'),
          202: generation.describe('Accepted and in flight: poll the Location'),
          ...errorResponses(400, 401, 402, 403, 409, 413, 429, 500, 503),
        },
      },
    }, async (request, reply) => {
      const options = generateOptionsOf(request, 'A', 'POST /api/v1/generate');
      const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () => deps.service.submit(toRequest(request.body), principalOf(request), options));
      if (options.respondAsync) reply.header('Preference-Applied', 'respond-async');
      if (g.status === 'queued' || g.status === 'running') {
        reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
      }
      return generationOf(g);
    });

    route.post('/api/v1/quote', {
      schema: {
        operationId: 'quote',
        tags,
        summary: 'What a generate request would cost now, with nothing held',
        description: 'The body of POST /api/v1/generate, priced by the same rules (scope, safety guard, model, clamping) without admitting it: nothing is held, run or recorded. An upscale’s image is not fetched.',
        security,
        body: v1GenerateBody,
        response: { 200: quote, ...errorResponses(400, 401, 403, 429, 500, 503) },
      },
    }, async (request) => inDoorWords(GROUP_A_PARAMS, () => deps.service.quote(toRequest(request.body), principalOf(request), 'A')));

    route.get('/api/v1/balance', {
      schema: {
        operationId: 'getBalance',
        tags,
        summary: 'Balance, active holds, plan and free chat allowance',
        security,
        response: { 200: balance, ...errorResponses(401, 429, 500, 503) },
      },
    }, async (request) => deps.service.balance(principalOf(request)));

    route.get('/api/v1/generations', {
      schema: {
        operationId: 'listGenerations',
        tags,
        summary: 'The account’s generations, newest first, every group’s',
        security,
        querystring: listQuery,
        response: { 200: generationList, ...errorResponses(400, 401, 429, 500, 503) },
      },
    }, async (request) => {
      const page = await deps.service.list(principalOf(request), request.query);
      return { data: page.data.map(generationOf), next_cursor: page.nextCursor };
    });

    route.get('/api/v1/generations/:id', {
      schema: {
        operationId: 'getGeneration',
        tags,
        summary: 'One generation: poll its status, read its output URL once it has succeeded',
        security,
        params: idParams,
        response: { 200: generation, ...errorResponses(401, 404, 429, 500, 503) },
      },
    }, async (request) => generationOf(await deps.service.get(principalOf(request), request.params.id)));

    route.post('/api/v1/generations/:id/cancel', {
      schema: {
        operationId: 'cancelGeneration',
        tags,
        summary: 'Cancel a queued or running generation: it fails with code cancelled and its hold is released',
        description: 'Cancelling a cancelled generation answers it again; any other finished one is a 409 naming its state.',
        security,
        params: idParams,
        response: { 200: generation, ...errorResponses(401, 404, 409, 429, 500, 503) },
      },
    }, async (request) => generationOf(await deps.service.cancel(principalOf(request), request.params.id)));
  });
};
