import { z } from 'zod';
import type { FileRow } from '../../../core/db/files';
import { ANTHROPIC_BATCH_ENDPOINT, BATCH_STATUSES, OPENAI_BATCH_ENDPOINTS } from '../../../core/vocabulary';
import type { BatchService, BatchView } from '../../../service/batches/service';
import { outputLineOf } from './batch-lines';
import { unixSeconds } from './words';

/** OpenAI's Batch and File objects, and a batch's output and error files, for every door that shows them. */

// A time or file the batch does not have yet is absent, as in OpenAI's Batch (never null).
const unix = z.number().int().optional();

export const batchObject = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.enum(OPENAI_BATCH_ENDPOINTS),
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
      .optional()
      .describe('Why the batch failed validation (nothing was held); absent otherwise'),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(BATCH_STATUSES),
    output_file_id: z.string().optional().describe('The lines that succeeded, once the batch has ended'),
    error_file_id: z.string().optional().describe('The lines that failed or never ran, once the batch has ended'),
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

/** The fields that have a value; the others are left out. */
function given<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Exclude<T[K], null> } {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null)) as {
    [K in keyof T]?: Exclude<T[K], null>;
  };
}
const seconds = (d: Date | null): number | null => (d === null ? null : unixSeconds(d));

/** A batch of OpenAI's format (group B shows no other) as OpenAI's Batch object. */
export function batchObjectOf(b: BatchView): z.infer<typeof batchObject> {
  if (b.endpoint === ANTHROPIC_BATCH_ENDPOINT || b.inputFileId === null)
    throw new Error(`batch ${b.id} is a Message Batch, not an OpenAI batch`);
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    ...(b.errors === null ? {} : { errors: { object: 'list' as const, data: b.errors } }),
    input_file_id: b.inputFileId,
    completion_window: b.completionWindow,
    status: b.status,
    ...given({ output_file_id: b.outputFileId, error_file_id: b.errorFileId }),
    created_at: unixSeconds(b.createdAt),
    ...given({
      in_progress_at: seconds(b.inProgressAt),
      expires_at: seconds(b.expiresAt),
      finalizing_at: seconds(b.finalizingAt),
      completed_at: seconds(b.completedAt),
      failed_at: seconds(b.failedAt),
      expired_at: seconds(b.expiredAt),
      cancelling_at: seconds(b.cancellingAt),
      cancelled_at: seconds(b.cancelledAt),
    }),
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
  const endpoint = batch.endpoint;
  if (endpoint === ANTHROPIC_BATCH_ENDPOINT)
    throw new Error(`batch ${batch.id} is a Message Batch, not an OpenAI batch`);
  for await (const page of batches.lines(batch, role === 'output' ? 'completed' : 'failed')) {
    const lines = await Promise.all(page.map((l) => outputLineOf(endpoint, batch.id, l, readFile)));
    yield lines.map((l) => `${JSON.stringify(l)}\n`).join('');
  }
}
