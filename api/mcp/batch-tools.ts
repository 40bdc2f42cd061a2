import { z } from 'zod';
import { isFinalBatch, OPENAI_BATCH_ENDPOINTS } from '../../core/vocabulary';
import { callbackEventsField, callbackOption, callbackUrlField, spendCapField } from '../shared/fields';
import { batch, batchOf } from '../shared/batches';
import { lineParserFor } from '../shared/openai/batch-lines';
import { inGroupBWords } from '../shared/openai/words';
import { CANCELS, defineTool, GENERATES, MAX_WAIT_SECONDS, READS, waitSeconds } from './define-tool';
import type { McpTool } from './define-tool';
import { structured } from './results';

const BATCH_ENDPOINT_IDS = OPENAI_BATCH_ENDPOINTS;
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
    webhook: callbackUrlField('webhook'),
    webhook_events_filter: callbackEventsField('webhook_events_filter'),
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
        input: { format: 'openai', inputFileId: file.id },
        endpoint: args.endpoint,
        // Its lines are group B requests, priced as group B prices them.
        door: 'group-b',
        metadata: args.metadata ?? null,
        spendCap: args.max_credits === undefined ? undefined : { credits: args.max_credits, param: 'max_credits' },
        parse: lineParserFor(args.endpoint, (input) => ctx.service.responses.conversation(ctx.principal, input)),
        inWords: (work) => inGroupBWords(work),
        ...callbackOption(args.webhook, args.webhook_events_filter, {
          param: 'webhook',
          eventsParam: 'webhook_events_filter',
        }),
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
    wait_seconds: waitSeconds('Wait up to this long for it to end'),
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

/** The batch tools: run many requests as one batch, read it, cancel it. */
export const BATCH_TOOLS: readonly McpTool[] = [generateBatch, getBatch, cancelBatch];
