import type { CallToolResult, Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../core/accounts/principal';
import { BATCH_ENDPOINTS, isFinalBatch } from '../../core/vocabulary';
import type { BatchEndpoint } from '../../core/vocabulary';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService, SubmitOptions } from '../../service/generation/service';
import { modelListing } from '../../service/catalogue/model-list';
import type { GenerationView } from '../../core/generation/view';
import { fromZod } from '../shared/errors';
import { clientDeadlineMs, spendCapField, spendCapOption, mediaPrompt, modelId } from '../shared/fields';
import { customerId, customerOption } from '../shared/customers';
import { groupAGenerateBody, groupAImageBody, groupARequestOf, groupAVideoBody } from '../shared/generate-bodies';
import { batch, batchOf } from '../shared/batches';
import { lineParserFor } from '../shared/openai/batch-lines';
import { inGroupBWords } from '../shared/openai/words';
import { generation, generationOf, modelEntry } from '../shared/schemas';
import { generationResult, structured } from './results';

/** What a tool call runs with: the one service, the caller, and how to tell the caller how it goes. */
export interface ToolContext {
  service: GenerationService;
  batches: BatchService;
  principal: Principal;
  /** How long a tool that waits for its generation (image, chat) waits, as REST does. */
  syncWaitMs: number;
  /** The request's X-Customer-Id: the customer a generate tool is for, unless its own `customer` argument names one. */
  customer?: string | undefined;
  /** Sends progress as the followed generation moves, when the caller sent a progressToken. */
  onStatus: ((g: GenerationView) => Promise<void>) | undefined;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The HTTP request's logger: admission lines carry its request id. */
  log: SubmitOptions['log'];
}

export interface McpTool {
  /** The definition tools/list shows: name, schemas (JSON Schema 2020-12), annotations, task support. */
  definition: Tool;
  /** Runs a call; invalid arguments and refusals throw (InvalidRequestError and the other domain errors). */
  call: (args: unknown, ctx: ToolContext) => Promise<CallToolResult>;
  /** For a task-augmented call: submits the generation the task will follow, without waiting for it. */
  submit?: (args: unknown, ctx: ToolContext) => Promise<GenerationView>;
}

/** A tool call's customer: its own `customer` argument, or the request's X-Customer-Id (the two must agree). */
const customerOf = (ctx: ToolContext, argument: string | undefined) =>
  customerOption({ 'x-customer-id': ctx.customer }, { customer: argument });

/** The longest a get_generation call may wait for its generation to finish. */
export const MAX_WAIT_SECONDS = 60;

/** Every tool's arguments are a strict object: an argument the tool does not know is refused, naming it. */
function defineTool<I extends z.ZodObject, P = z.output<I>>(t: {
  name: string;
  title: string;
  description: string;
  input: I;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  /** Validates the arguments (by default with the input schema); a ZodError becomes invalid_request_error. */
  parse?: (args: unknown) => P;
  run: (args: P, ctx: ToolContext) => Promise<CallToolResult>;
  submit?: (args: P, ctx: ToolContext) => Promise<GenerationView>;
}): McpTool {
  const validate = t.parse ?? ((args: unknown) => t.input.parse(args) as P);
  const parse = (args: unknown): P => {
    try {
      return validate(args ?? {});
    } catch (err) {
      throw err instanceof z.ZodError ? fromZod(err) : err;
    }
  };
  const submit = t.submit;
  return {
    definition: {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: jsonSchemaOf(t.input, 'input'),
      outputSchema: jsonSchemaOf(t.output, 'output'),
      annotations: { title: t.title, ...t.annotations },
      ...(submit ? { execution: { taskSupport: 'optional' as const } } : {}),
    },
    call: (args, ctx) => t.run(parse(args), ctx),
    ...(submit ? { submit: (args: unknown, ctx: ToolContext) => submit(parse(args), ctx) } : {}),
  };
}

/** Tool schemas are objects at the top (MCP requires `type: "object"`); shared parts go to `$defs`. */
function jsonSchemaOf(schema: z.ZodObject, io: 'input' | 'output'): Tool['inputSchema'] {
  return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Tool['inputSchema'];
}

/** A generation as group A answers it, as a plain object schema (the named one is a `$ref`). */
const generationOutput = z.object(generation.shape);

/** Media tools spend credits and reach model providers: never destructive, never idempotent. */
const GENERATES: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};
const READS: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
/** Cancelling stops work and releases its hold: destructive to that work, the same answer when repeated. */
const CANCELS: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};

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
    wait_seconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_WAIT_SECONDS)
      .default(0)
      .describe('Wait up to this many seconds for the generation to finish'),
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

const BATCH_ENDPOINT_IDS = Object.keys(BATCH_ENDPOINTS) as [BatchEndpoint, ...BatchEndpoint[]];
/** A batch made through MCP names its requests in the call; larger ones go through POST /v1/files. */
const MAX_MCP_BATCH = 1_000;
const batchOutput = z.object(batch.shape);
const batchId = z
  .string()
  .min(1)
  .max(64)
  .describe('A batch id (batch_…), as generate_batch or POST /v1/batches answered it');

const generateBatch = defineTool({
  name: 'generate_batch',
  title: 'Run many requests as one batch',
  description:
    'Runs up to 1,000 requests to one OpenAI-compatible endpoint (/v1/chat/completions, /v1/responses, /v1/images/generations, ' +
    '/v1/videos, /v1/video/generations) as one batch, at the batch price (list_models, `batch`). Every request is checked and priced ' +
    'first: one that is wrong makes the batch failed with its line number (the first request is line 1) and nothing is held. ' +
    'Otherwise the whole price is held at once and each request is charged what it costs when it succeeds, released when it fails. ' +
    'Answers the batch at once; follow it with get_batch, stop it with cancel_batch; its results are group A’s ' +
    '/api/v1/batches/{id}/output and /errors (or GET /v1/files/{output_file_id}/content).',
  input: z.object({
    endpoint: z.enum(BATCH_ENDPOINT_IDS).describe('Every request calls it'),
    requests: z
      .array(
        z.object({
          custom_id: z.string().min(1).max(512).describe('Your id for the request; its result carries it'),
          body: z.record(z.string(), z.unknown()).describe('The request body, as the endpoint takes it'),
        }),
      )
      .min(1)
      .max(MAX_MCP_BATCH),
    metadata: z.record(z.string().max(64), z.string().max(512)).optional(),
    max_credits: spendCapField('max_credits').describe('The most the whole batch may cost; above it nothing is held'),
  }),
  output: batchOutput,
  annotations: GENERATES,
  run: async (args, ctx) => {
    const text = args.requests
      .map((r) => JSON.stringify({ custom_id: r.custom_id, method: 'POST', url: args.endpoint, body: r.body }))
      .join('\n');
    const file = await ctx.batches.files.upload(ctx.principal, {
      filename: 'mcp-batch.jsonl',
      purpose: 'batch',
      data: Buffer.from(text),
    });
    const made = await inGroupBWords(() =>
      ctx.batches.create(ctx.principal, {
        inputFileId: file.id,
        endpoint: args.endpoint,
        metadata: args.metadata ?? null,
        spendCap: args.max_credits === undefined ? undefined : { credits: args.max_credits, param: 'max_credits' },
        parse: lineParserFor(args.endpoint, (input) => ctx.service.responses.conversation(ctx.principal, input)),
        inWords: (work) => inGroupBWords(work),
      }),
    );
    const view = await ctx.batches.get(ctx.principal, made.id);
    return structured(batchOf(view), { isError: view.status === 'failed' });
  },
});

const getBatch = defineTool({
  name: 'get_batch',
  title: 'Read a batch',
  description:
    'One batch of this account: its status (in_progress, cancelling, completed, failed, cancelled, expired), request counts and ' +
    `credits, and its output and error file ids once it has ended. With wait_seconds (at most ${MAX_WAIT_SECONDS}) the call waits ` +
    'that long for it to end.',
  input: z.object({
    id: batchId,
    wait_seconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_WAIT_SECONDS)
      .default(0)
      .describe('Wait up to this long for it to end'),
  }),
  output: batchOutput,
  annotations: READS,
  run: async (args, ctx) => {
    const until = Date.now() + args.wait_seconds * 1000;
    let b = await ctx.batches.get(ctx.principal, args.id);
    while (!isFinalBatch(b.status) && Date.now() < until && !ctx.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, until - Date.now())));
      b = await ctx.batches.get(ctx.principal, args.id);
    }
    return structured(batchOf(b));
  },
});

const cancelBatch = defineTool({
  name: 'cancel_batch',
  title: 'Cancel a batch',
  description:
    'Cancels a batch of this account: requests not finished are stopped and their held credits released; those finished stay ' +
    'charged. It is cancelling, then cancelled within seconds. One that has already ended otherwise is a batch_finished error.',
  input: z.object({ id: batchId }),
  output: batchOutput,
  annotations: CANCELS,
  run: async (args, ctx) => structured(batchOf(await ctx.batches.cancel(ctx.principal, args.id))),
});

/** The tools of the MCP endpoint, by name (on both protocol revisions). */
export const TOOLS: ReadonlyMap<string, McpTool> = new Map(
  [
    generateImage,
    generateVideo,
    enhancePrompt,
    listModels,
    getGeneration,
    cancelGeneration,
    generateBatch,
    getBatch,
    cancelBatch,
  ].map((t) => [t.definition.name, t]),
);
