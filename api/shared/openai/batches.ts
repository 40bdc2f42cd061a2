import { z } from 'zod';
import type { FileRow } from '../../../core/db/files';
import { BATCH_ENDPOINTS, BATCH_STATUSES } from '../../../core/vocabulary';
import type { BatchEndpoint } from '../../../core/vocabulary';
import type { BatchService, BatchView } from '../../../service/batches/service';
import { outputLineOf } from './batch-lines';
import { unixSeconds } from './words';

/** OpenAI's Batch and File objects, and a batch's output and error files, for every door that shows them. */

const unix = z.number().int().nullable();

export const batchObject = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.enum(Object.keys(BATCH_ENDPOINTS) as [BatchEndpoint, ...BatchEndpoint[]]),
    errors: z
      .object({
        object: z.literal('list'),
        data: z.array(
          z.object({
            code: z.string(),
            message: z.string(),
            param: z.string().nullable(),
            line: z.number().int().nullable().describe('The input file’s line (the first is 1); null for the file'),
          }),
        ),
      })
      .nullable()
      .describe('Why the batch failed validation; nothing was held'),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(BATCH_STATUSES),
    output_file_id: z.string().nullable().describe('The lines that succeeded, once the batch has ended'),
    error_file_id: z.string().nullable().describe('The lines that failed or never ran, once the batch has ended'),
    created_at: z.number().int(),
    in_progress_at: unix,
    expires_at: unix,
    finalizing_at: unix,
    completed_at: unix,
    failed_at: unix,
    expired_at: unix,
    cancelling_at: unix,
    cancelled_at: unix,
    request_counts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    metadata: z.record(z.string(), z.string()).nullable(),
    credits_held: z.number().describe('What the batch held when it was created: every line at the batch rate'),
    credits_charged: z.number().describe('What its lines have been charged so far'),
  })
  .meta({ id: 'Batch' });

const unixOrNull = (d: Date | null): number | null => (d === null ? null : unixSeconds(d));

export function batchObjectOf(b: BatchView): z.infer<typeof batchObject> {
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    errors: b.errors === null ? null : { object: 'list', data: b.errors },
    input_file_id: b.inputFileId,
    completion_window: b.completionWindow,
    status: b.status,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    created_at: unixSeconds(b.createdAt),
    in_progress_at: unixOrNull(b.inProgressAt),
    expires_at: unixOrNull(b.expiresAt),
    finalizing_at: unixOrNull(b.finalizingAt),
    completed_at: unixOrNull(b.completedAt),
    failed_at: unixOrNull(b.failedAt),
    expired_at: unixOrNull(b.expiredAt),
    cancelling_at: unixOrNull(b.cancellingAt),
    cancelled_at: unixOrNull(b.cancelledAt),
    request_counts: b.requestCounts,
    metadata: b.metadata,
    credits_held: b.creditsHeld,
    credits_charged: b.creditsCharged,
  };
}

export const fileObject = z
  .object({
    id: z.string(),
    object: z.literal('file'),
    bytes: z.number().int(),
    created_at: z.number().int(),
    filename: z.string(),
    purpose: z.enum(['batch', 'batch_output']),
    status: z.literal('processed'),
  })
  .meta({ id: 'FileObject' });

export function fileObjectOf(f: FileRow, bytes: number): z.infer<typeof fileObject> {
  return {
    id: f.id,
    object: 'file',
    bytes,
    created_at: unixSeconds(f.createdAt),
    filename: f.filename,
    purpose: f.purpose,
    status: 'processed',
  };
}

/**
 * A finished batch's output file (`output`: the lines that succeeded) or error file (`errors`: the
 * others), line by line in the input file's order, as JSONL. Read from the lines' records each time,
 * so image and video URLs are freshly signed. `readFile` reads an image a line answers in base64.
 */
export async function* batchFileLines(
  batches: Pick<BatchService, 'lines'>,
  batch: Parameters<BatchService['lines']>[0],
  role: 'output' | 'errors',
  readFile: (generationId: string) => Promise<Buffer | undefined>,
): AsyncGenerator<string> {
  for await (const page of batches.lines(batch, role === 'output' ? 'completed' : 'failed')) {
    const lines = await Promise.all(page.map((l) => outputLineOf(batch.endpoint, batch.id, l, readFile)));
    yield lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  }
}
