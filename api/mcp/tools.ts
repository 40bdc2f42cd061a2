import { z } from 'zod';
import type { GenerationView } from '../../core/generation/view';
import { modelListing } from '../../service/catalogue/model-list';
import { clientDeadlineMs, spendCapField, spendCapOption, mediaPrompt, modelId } from '../shared/fields';
import { customerId, customerOption } from '../shared/customers';
import {
  groupACallbackOption,
  groupAGenerateBody,
  groupAImageBody,
  groupARequestOf,
  groupAVideoBody,
} from '../shared/generate-bodies';
import { generationOf, modelEntry } from '../shared/schemas';
import { BATCH_TOOLS } from './batch-tools';
import { CANCELS, defineTool, GENERATES, generationOutput, MAX_WAIT_SECONDS, READS, waitSeconds } from './define-tool';
import type { McpTool, ToolContext } from './define-tool';
import { generationResult, structured } from './results';

/** A tool call's customer: its own `customer` argument, or the request's X-Customer-Id (the two must agree). */
const customerOf = (ctx: ToolContext, argument: string | undefined) =>
  customerOption({ 'x-customer-id': ctx.customer }, { customer: argument });

const ENHANCE_MAX_TOKENS = 300;
const enhanceInstructions = (target: 'image' | 'video') =>
  `You rewrite prompts for ${target} generation models. Keep the user's intent and subject; make it concrete: ` +
  `subject, setting, composition, lighting, style${target === 'video' ? ', camera movement and pacing' : ''}. ` +
  'Answer with the improved prompt only, in one paragraph, without comments or quotes.';

const enhanceOutput = z.object({
  prompt: z.string().describe('The improved prompt; empty if the chat reply failed or is not finished'),
  generation: generationOutput.describe('The chat generation that wrote it (its id, credits charged, …)'),
});

/** A media tool's arguments are group A's body of that kind: parsed by the same schema, refinements included. */
const asGroupA = (kind: 'image' | 'video') => (args: unknown) =>
  groupAGenerateBody.parse({ ...(args as object), kind });
const listedModel = (kind: 'image' | 'video', example: string) =>
  modelId.describe(`A ${kind} model id or alias from list_models, e.g. ${example}`);

const generateImage = defineTool({
  name: 'generate_image',
  title: 'Generate an image',
  description:
    'Generates one image and waits for it (usually seconds). Answers the generation: its id, status, the credits charged and ' +
    'a signed URL of the image (valid 24 h), also given as a resource_link. The price is held when the call is accepted and ' +
    'charged only if the image is made. Needs the image scope. Models and prices: list_models {"kind":"image"}.',
  input: groupAImageBody.omit({ kind: true }).extend({ model: listedModel('image', 'flux') }),
  output: generationOutput,
  annotations: GENERATES,
  parse: asGroupA('image'),
  run: async (body, ctx) => {
    const { generation: submitted } = await ctx.service.submit(groupARequestOf(body), ctx.principal, {
      door: 'mcp',
      respondAsync: true,
      log: ctx.log,
      deadlineMs: clientDeadlineMs(undefined, body.deadline_seconds),
      ...spendCapOption(body.max_credits, 'max_credits'),
      ...customerOf(ctx, body.customer),
      ...groupACallbackOption(body),
    });
    const g = await ctx.service.follow(ctx.principal, submitted.id, {
      waitMs: ctx.syncWaitMs,
      onStatus: ctx.onStatus,
      signal: ctx.signal,
    });
    return generationResult(g, { failedIsError: true });
  },
});

const submitVideo = async (body: z.output<typeof groupAGenerateBody>, ctx: ToolContext): Promise<GenerationView> =>
  (
    await ctx.service.submit(groupARequestOf(body), ctx.principal, {
      door: 'mcp',
      log: ctx.log,
      deadlineMs: clientDeadlineMs(undefined, body.deadline_seconds),
      ...spendCapOption(body.max_credits, 'max_credits'),
      ...customerOf(ctx, body.customer),
      ...groupACallbackOption(body),
    })
  ).generation;

const generateVideo = defineTool({
  name: 'generate_video',
  title: 'Generate a video',
  description:
    'Starts a video and answers at once with its generation id and status queued or running; a video takes minutes. ' +
    'Call it as an MCP task to follow it with tasks/get and tasks/result, or follow the id with get_generation. ' +
    'Its price (seconds × the per-second rate of the resolution) is held meanwhile and charged only if the video is made. ' +
    'Needs the video scope. Models, rates and seconds ranges: list_models {"kind":"video"}.',
  input: groupAVideoBody.omit({ kind: true }).extend({ model: listedModel('video', 'kling') }),
  output: generationOutput,
  annotations: GENERATES,
  parse: asGroupA('video'),
  run: async (body, ctx) => generationResult(await submitVideo(body, ctx), { failedIsError: true }),
  submit: submitVideo,
});

const enhancePrompt = defineTool({
  name: 'enhance_prompt',
  title: 'Improve a prompt',
  description:
    'Rewrites a prompt for generate_image or generate_video to be concrete and detailed, keeping its intent. It is a chat ' +
    'reply, billed as one (free while the account has free chat replies left). Needs the chat scope.',
  input: z.strictObject({
    prompt: mediaPrompt.describe('The prompt to improve'),
    target: z.enum(['image', 'video']).default('image').describe('What the prompt is for (default image)'),
    model: modelId.optional().describe('A chat model; omitted or auto: the service picks'),
    max_credits: spendCapField('max_credits'),
    customer: customerId('customer').optional(),
  }),
  output: enhanceOutput,
  annotations: GENERATES,
  run: async (args, ctx) => {
    const request = {
      kind: 'chat' as const,
      model: args.model,
      maxTokens: ENHANCE_MAX_TOKENS,
      messages: [
        { role: 'system' as const, content: enhanceInstructions(args.target) },
        { role: 'user' as const, content: args.prompt },
      ],
    };
    const { generation: submitted } = await ctx.service.submit(request, ctx.principal, {
      door: 'mcp',
      respondAsync: true,
      log: ctx.log,
      ...spendCapOption(args.max_credits, 'max_credits'),
      ...customerOf(ctx, args.customer),
    });
    const g = await ctx.service.follow(ctx.principal, submitted.id, {
      waitMs: ctx.syncWaitMs,
      onStatus: ctx.onStatus,
      signal: ctx.signal,
    });
    return structured(
      { prompt: g.status === 'succeeded' ? (g.text ?? '').trim() : '', generation: generationOf(g) },
      { isError: g.status === 'failed' },
    );
  },
});

const listModels = defineTool({
  name: 'list_models',
  title: 'List models and prices',
  description:
    'Every model with its kind, the ids it is known by, its unit (image, second, reply) and prices in credits (1 credit = 0.01 EUR), ' +
    'seconds range and defaults. Optionally of one kind.',
  input: z.strictObject({ kind: modelEntry.shape.kind.optional().describe('Only models of this kind') }),
  output: z.object({ data: z.array(modelEntry) }),
  annotations: READS,
  run: async (args, ctx) => structured({ data: modelListing(ctx.batches.rates, args.kind) }),
});

const getGeneration = defineTool({
  name: 'get_generation',
  title: 'Read a generation',
  description:
    'One generation of this account by id (any door made it): status queued, running, succeeded or failed, the signed output URL ' +
    'once it has succeeded (also as a resource_link), credits charged, and the error of a failed one. With wait_seconds the call ' +
    `waits up to that long (at most ${MAX_WAIT_SECONDS}) for the generation to finish, so a video can be followed without polling hard.`,
  input: z.strictObject({
    id: z.string().min(1).max(64).describe('A generation id (gen_…), as a generate tool or the REST API answered it'),
    wait_seconds: waitSeconds('Wait up to this many seconds for the generation to finish'),
  }),
  output: generationOutput,
  annotations: READS,
  run: async (args, ctx) => {
    const g =
      args.wait_seconds > 0
        ? await ctx.service.follow(ctx.principal, args.id, {
            waitMs: args.wait_seconds * 1000,
            onStatus: ctx.onStatus,
            signal: ctx.signal,
          })
        : await ctx.service.get(ctx.principal, args.id);
    return generationResult(g, { failedIsError: false });
  },
});

const cancelGeneration = defineTool({
  name: 'cancel_generation',
  title: 'Cancel a generation',
  description:
    'Cancels a queued or running generation of this account (a video started by generate_video, for one): it fails with code ' +
    'cancelled and its held credits are released; nothing is charged. Cancelling it again answers the same record. A generation ' +
    'that has already finished otherwise is a generation_finished error naming its status, as POST /api/v1/generations/{id}/cancel answers.',
  input: z.strictObject({
    id: z.string().min(1).max(64).describe('A generation id (gen_…), as a generate tool or the REST API answered it'),
  }),
  output: generationOutput,
  annotations: CANCELS,
  run: async (args, ctx) =>
    generationResult(await ctx.service.cancel(ctx.principal, args.id), { failedIsError: false }),
});

/** The tools of the MCP endpoint, by name (on both protocol revisions). */
export const TOOLS: ReadonlyMap<string, McpTool> = new Map(
  [generateImage, generateVideo, enhancePrompt, listModels, getGeneration, cancelGeneration, ...BATCH_TOOLS].map(
    (t) => [t.definition.name, t],
  ),
);
