import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import { FILE_ID_PATTERN } from '../../core/ids';
import { principalOf } from '../shared/auth';
import { batchFileLines, fileObject, fileObjectOf } from '../shared/openai/batches';
import { idParams } from '../shared/schemas';
import { errorsB, openaiPage, pageLimit, pageOrder, security, tags } from './common';
import { acceptForms } from './forms';
import type { GroupBApp, GroupBDeps } from './common';

/**
 * Group B's files (`/v1/files`), as the official SDK's `client.files` calls them: JSONL uploaded
 * for batches (`purpose: "batch"`), and the output and error files of finished batches, read from
 * their lines' records each time (so their URLs are freshly signed).
 */

/** An uploaded file as the multipart parser hands it to the route. */
interface Upload {
  filename: string;
  data: Buffer;
}

const uploadBody = z
  .object({
    file: z
      .custom<Upload>((v) => typeof v === 'object' && v !== null && Buffer.isBuffer((v as Upload).data), {
        error: 'file: the JSONL file, sent as multipart/form-data',
      })
      .describe('The JSONL file (multipart/form-data)'),
    purpose: z.string().max(40).describe('Only "batch"'),
    expires_after: z.unknown().optional().describe('Accepted and ignored'),
  })
  .meta({ id: 'FileUploadRequest' });

const fileList = openaiPage(fileObject, 'FileList');

const listQuery = z.object({
  after: z
    .string()
    .regex(FILE_ID_PATTERN, { error: 'after must be the id of a file of a previous page (its last_id)' })
    .optional(),
  limit: pageLimit(10_000, 10_000),
  order: pageOrder,
  purpose: z.enum(['batch', 'batch_output'], { error: "purpose must be 'batch' or 'batch_output'" }).optional(),
});

type Principal = ReturnType<typeof principalOf>;

/** Uploading, listing, reading and deleting files, in the document's order. */
export const groupBFileRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  await acceptUploads(app, deps);
  uploadFileRoute(app, deps);
  readFileRoutes(app, deps);
  fileContentRoute(app, deps);
  deleteFileRoute(app, deps);
};

/** The SDK uploads as multipart/form-data; the file is kept with its name. A JSON body is refused, saying how to send one. */
async function acceptUploads(app: GroupBApp, deps: GroupBDeps): Promise<void> {
  await acceptForms(app, {
    limits: { fileSize: deps.batches.files.limits.maxBytes, files: 1, fields: 5 },
    fileValue: async (part): Promise<Upload> => ({ filename: part.filename, data: await part.toBuffer() }),
  });
  app.addHook('preValidation', async (request) => {
    if (request.method === 'POST' && request.url === '/v1/files' && !request.isMultipart())
      throw new InvalidRequestError('Send the file as multipart/form-data with fields file and purpose.', 'file');
  });
}

/** A file's size: an output file is measured once, the first time it is read. */
async function bytesOf(deps: GroupBDeps, principal: Principal, id: string): Promise<number> {
  const files = deps.batches.files;
  const content = await files.content(principal, id);
  if ('data' in content) return content.data.length;
  if (content.file.bytes !== null) return content.file.bytes;
  let bytes = 0;
  for await (const chunk of renderBatchFile(deps, principal, content.batch, content.role))
    bytes += Buffer.byteLength(chunk);
  await files.recordBytes(content.file.id, bytes);
  return bytes;
}

/** A batch's output or error file, line by line, from its requests' records. */
function renderBatchFile(
  deps: GroupBDeps,
  principal: Principal,
  batch: Parameters<typeof batchFileLines>[1],
  role: 'output' | 'errors',
) {
  return batchFileLines(deps.batches, batch, role, async (generationId) => {
    const { file } = await deps.service.output(principal, generationId);
    return file?.data;
  });
}

/** Uploading a JSONL file for a batch. */
function uploadFileRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.post(
    '/v1/files',
    {
      schema: {
        operationId: 'openaiUploadFile',
        tags,
        security,
        summary: 'Upload a JSONL file for a batch (client.files.create, purpose "batch")',
        description:
          `multipart/form-data with \`file\` and \`purpose: "batch"\`. At most ${deps.batches.files.limits.maxBytes} bytes and ` +
          `${deps.batches.files.limits.maxLines} requests, each line at most ${deps.batches.files.limits.maxLineBytes} bytes; its lines are read when a batch is made from it.`,
        consumes: ['multipart/form-data'],
        body: uploadBody,
        response: { 200: fileObject, ...errorsB(400, 401, 413, 429, 500, 503) },
      },
    },
    async (request) => {
      const { file, purpose } = request.body;
      const row = await deps.batches.files.upload(principalOf(request), {
        filename: file.filename,
        purpose,
        data: file.data,
      });
      return fileObjectOf(row, row.bytes ?? file.data.length);
    },
  );
}

/** The account's files, a page at a time, and one file. */
function readFileRoutes(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
    '/v1/files',
    {
      schema: {
        operationId: 'openaiListFiles',
        tags,
        security,
        summary: 'The account’s files, newest first (client.files.list); pages follow `after`',
        querystring: listQuery,
        response: { 200: fileList, ...errorsB(400, 401, 429, 500, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const page = await deps.batches.files.list(principal, request.query);
      const data = await Promise.all(
        page.data.map(async (f) => fileObjectOf(f, f.bytes ?? (await bytesOf(deps, principal, f.id)))),
      );
      return {
        object: 'list' as const,
        data,
        first_id: data[0]?.id ?? null,
        last_id: data.at(-1)?.id ?? null,
        has_more: page.hasMore,
      };
    },
  );

  app.get(
    '/v1/files/:id',
    {
      schema: {
        operationId: 'openaiRetrieveFile',
        tags,
        security,
        summary: 'A file (client.files.retrieve)',
        params: idParams,
        response: { 200: fileObject, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const file = await deps.batches.files.get(principal, request.params.id);
      return fileObjectOf(file, file.bytes ?? (await bytesOf(deps, principal, file.id)));
    },
  );
}

/** A file's content: an upload as sent, a batch's output or error file as JSONL. */
function fileContentRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.get(
    '/v1/files/:id/content',
    {
      schema: {
        operationId: 'openaiFileContent',
        tags,
        security,
        summary:
          'A file’s content (client.files.content): an uploaded file as sent, a batch’s output or error file as JSONL',
        description:
          'A batch’s output file has one line per request that succeeded, its error file one per request that failed or never ran: ' +
          '`{ id, custom_id, response: { status_code, request_id, body }, error }`, the body being what the request’s endpoint would have answered.',
        params: idParams,
        response: {
          200: {
            description: 'The file',
            content: { 'application/jsonl': { schema: z.string().describe('JSONL') } },
          },
          ...errorsB(401, 404, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const content = await deps.batches.files.content(principal, request.params.id);
      reply.header('content-type', 'application/jsonl');
      reply.header('content-disposition', `attachment; filename="${content.file.filename.replace(/["\\]/g, '_')}"`);
      if ('data' in content) return reply.send(content.data as unknown as string);
      return reply.send(
        Readable.from(renderBatchFile(deps, principal, content.batch, content.role)) as unknown as string,
      );
    },
  );
}

/** Deleting a file; batches made from it keep their lines. */
function deleteFileRoute(app: GroupBApp, deps: GroupBDeps): void {
  app.delete(
    '/v1/files/:id',
    {
      schema: {
        operationId: 'openaiDeleteFile',
        tags,
        security,
        summary: 'Deletes a file (client.files.delete); batches made from it keep their lines',
        params: idParams,
        response: {
          200: z.object({ id: z.string(), object: z.literal('file'), deleted: z.literal(true) }),
          ...errorsB(401, 404, 429, 500, 503),
        },
      },
    },
    async (request) => {
      await deps.batches.files.remove(principalOf(request), request.params.id);
      return { id: request.params.id, object: 'file' as const, deleted: true as const };
    },
  );
}
