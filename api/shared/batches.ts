import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { NotFoundError } from '../../core/errors';
import {
  BATCH_ENDPOINTS,
  BATCH_FORMATS,
  BATCH_STATUSES,
  batchFormatOf,
  GENERATION_KINDS,
  isFinalBatch,
} from '../../core/vocabulary';
import type { BatchEndpoint } from '../../core/vocabulary';
import type { Principal } from '../../core/accounts/principal';
import { principalOf } from './auth';
import type { BatchService, BatchView } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { BATCH_ID_PATTERN } from '../../core/ids';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { messageBatchResults } from './anthropic/batch-results';
import { batchFileLines } from './openai/batches';
import { openEventStream } from './sse';

/**
 * A batch as group A, MCP and the dashboard show it (camelCase, ISO times), of either format, and
 * its output and error files as those doors download them: for OpenAI's format the same JSONL
 * group B's `/v1/files/{id}/content` serves; for Anthropic's, its results (as
 * `/v1/messages/batches/{id}/results` has them) that succeeded, and those that did not.
 */

const iso = z.string().nullable().describe('ISO 8601 UTC');

export const batch = z
  .object({
    id: z.string(),
    format: z
      .enum(BATCH_FORMATS)
      .describe('openai: made with POST /v1/batches or MCP; anthropic: a Message Batch (POST /v1/messages/batches)'),
    endpoint: z.enum(Object.keys(BATCH_ENDPOINTS) as [BatchEndpoint, ...BatchEndpoint[]]),
    kind: z.enum(GENERATION_KINDS),
    status: z.enum(BATCH_STATUSES),
    requestCounts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    running: z.number().int().describe('Lines started and not ended'),
    waiting: z.number().int().describe('Lines not started yet'),
    creditsHeld: z.number().describe('Held when it was made: every line at the batch rate'),
    creditsCharged: z.number().describe('Charged for its lines so far'),
    inputFileId: z.string().nullable().describe('Null for a Message Batch (its requests came inline)'),
    outputFileId: z.string().nullable().describe('OpenAI’s format: its output file once it has ended'),
    errorFileId: z.string().nullable().describe('OpenAI’s format: its error file once it has ended'),
    errors: z
      .array(
        z.object({
          code: z.string(),
          message: z.string(),
          param: z.string().nullable(),
          line: z.number().int().nullable(),
        }),
      )
      .nullable()
      .describe('Why it failed validation (line numbers start at 1)'),
    metadata: z.record(z.string(), z.string()).nullable(),
    createdAt: z.string(),
    expiresAt: iso,
    finishedAt: iso.describe('When it completed, failed, expired or was cancelled'),
  })
  .meta({ id: 'GroupABatch' });

export function batchOf(b: BatchView): z.infer<typeof batch> {
  const finished = b.completedAt ?? b.failedAt ?? b.expiredAt ?? b.cancelledAt;
  return {
    id: b.id,
    format: b.format,
    endpoint: b.endpoint,
    kind: b.kind,
    status: b.status,
    requestCounts: b.requestCounts,
    running: b.running,
    waiting: b.waiting,
    creditsHeld: b.creditsHeld,
    creditsCharged: b.creditsCharged,
    inputFileId: b.inputFileId,
    outputFileId: b.outputFileId,
    errorFileId: b.errorFileId,
    errors: b.errors,
    metadata: b.metadata,
    createdAt: b.createdAt.toISOString(),
    expiresAt: b.expiresAt?.toISOString() ?? null,
    finishedAt: finished?.toISOString() ?? null,
  };
}

export const batchList = z
  .object({
    data: z.array(batch),
    next_cursor: z.string().nullable().describe('Pass as cursor for the next page; null on the last page'),
  })
  .meta({ id: 'GroupABatchList' });

/** The answer of a batch's output or error file. */
export const batchFileResponse = {
  description:
    'JSONL: one line per request, as group B’s output and error files (OpenAI’s format) or as a Message Batch’s results (Anthropic’s)',
  content: { 'application/jsonl': { schema: z.string().describe('JSONL') } },
};

/** A page of the account's batches, newest first, after the batch a cursor names. */
export async function batchPage(
  batches: BatchService,
  principal: Principal,
  query: { limit: number; cursor?: string | undefined },
): Promise<z.infer<typeof batchList>> {
  const page = await batches.list(principal, {
    limit: query.limit,
    after: query.cursor === undefined ? undefined : decodeCursor(query.cursor, BATCH_ID_PATTERN),
  });
  const last = page.data.at(-1);
  return { data: page.data.map(batchOf), next_cursor: page.hasMore && last ? encodeCursor(last.id) : null };
}

/**
 * Follows a batch as Server-Sent Events: `progress` with the batch at each change, `done` at its
 * end, then the stream closes. `after` is the `Last-Event-ID` to resume after.
 */
export async function followBatch(
  request: FastifyRequest,
  reply: FastifyReply,
  batches: BatchService,
  id: string,
  after?: string,
): Promise<void> {
  const controller = new AbortController();
  const events = await batches.watch(principalOf(request), id, { signal: controller.signal, after });
  const sse = openEventStream(request, reply);
  sse.signal.addEventListener('abort', () => controller.abort(), { once: true });
  void (async () => {
    try {
      for await (const e of events) sse.send(e.final ? 'done' : 'progress', batchOf(e.batch), e.id);
    } catch (err) {
      request.log.warn({ err }, 'batch events: the stream stopped');
    } finally {
      sse.end();
    }
  })();
}

/**
 * Sends a batch's output file (`output`) or error file (`errors`) as JSONL; 404 until the batch has
 * ended with such lines.
 */
export async function sendBatchFile(
  reply: FastifyReply,
  deps: { batches: BatchService; service: GenerationService },
  principal: Principal,
  id: string,
  role: 'output' | 'errors',
): Promise<FastifyReply> {
  const row = await deps.batches.own(principal, id);
  if (batchFormatOf(row.endpoint) === 'anthropic')
    return sendMessageBatchFile(reply, deps.batches, principal, row, role);
  const fileId = role === 'output' ? row.outputFileId : row.errorFileId;
  const content = fileId === null ? undefined : await deps.batches.files.content(principal, fileId);
  if (!content || !('batch' in content)) {
    const running = row.status === 'in_progress' || row.status === 'cancelling';
    throw new NotFoundError(
      `Batch '${row.id}' has no ${role === 'output' ? 'output' : 'error'} file${running ? ' yet' : ''}.`,
      { param: 'id' },
    );
  }
  const lines = batchFileLines(deps.batches, content.batch, role, async (generationId) => {
    const { file } = await deps.service.output(principal, generationId);
    return file?.data;
  });
  return reply
    .header('content-type', 'application/jsonl')
    .header('content-disposition', `attachment; filename="${content.file.filename}"`)
    .send(Readable.from(lines));
}

/** A Message Batch's results that succeeded (`output`) or did not (`errors`); 404 until it has ended with such lines. */
async function sendMessageBatchFile(
  reply: FastifyReply,
  batches: BatchService,
  principal: Principal,
  row: Awaited<ReturnType<BatchService['own']>>,
  role: 'output' | 'errors',
): Promise<FastifyReply> {
  const { requestCounts } = await batches.get(principal, row.id);
  const lines = role === 'output' ? requestCounts.completed : requestCounts.failed;
  if (!isFinalBatch(row.status) || lines === 0)
    throw new NotFoundError(
      `Batch '${row.id}' has no ${role === 'output' ? 'output' : 'error'} file${isFinalBatch(row.status) ? '' : ' yet'}.`,
      { param: 'id' },
    );
  return reply
    .header('content-type', 'application/jsonl')
    .header('content-disposition', `attachment; filename="${row.id}_${role === 'output' ? 'output' : 'error'}.jsonl"`)
    .send(Readable.from(messageBatchResults(batches, row, role === 'output' ? 'completed' : 'failed')));
}
