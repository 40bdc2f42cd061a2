import type pg from 'pg';
import { countLines } from '../../core/batches/input';
import { getBatch } from '../../core/db/batches';
import type { BatchRow } from '../../core/db/batches';
import { deleteFile, getFile, insertFile, listFiles, setFileBytes } from '../../core/db/files';
import type { FilePurpose, FileRow } from '../../core/db/files';
import { InvalidRequestError, NotFoundError } from '../../core/errors';
import { FILE_ID_PATTERN, newId } from '../../core/ids';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';

/** What a batch's input file may be: its size and lines (a line's own size is checked when the batch reads it). */
export interface FileLimits {
  maxBytes: number;
  maxLines: number;
  maxLineBytes: number;
}

/** A file's content: an uploaded file's bytes, or the batch whose output or error file it is (rendered by the door). */
export type FileContent =
  { file: FileRow; data: Buffer } | { file: FileRow; batch: BatchRow; role: 'output' | 'errors' };

const FILENAME_MAX = 255;

/**
 * The Batch API's files (`/v1/files`): JSONL uploaded for batches (kept in the output store, its
 * row in PostgreSQL), and each batch's output and error files, which are its lines' records read
 * when asked for (fresh signed URLs every time). Files are the account's own; a deleted one is
 * gone for every read (batches made from it have their lines already).
 */
export function createFileService(deps: { pool: pg.Pool; store: OutputStore; limits: FileLimits }) {
  const { pool, store, limits } = deps;

  const own = async (principal: Principal, id: string): Promise<FileRow> => {
    const f = FILE_ID_PATTERN.test(id) ? await getFile(pool, principal.accountId, id) : undefined;
    if (!f) throw new NotFoundError(`No such File object: ${id}`, { param: 'id' });
    return f;
  };

  return {
    limits,

    /** Stores an uploaded file for batches; only `purpose: "batch"`, JSONL within the limits. */
    async upload(principal: Principal, f: { filename: string; purpose: string; data: Buffer }): Promise<FileRow> {
      if (f.purpose !== 'batch')
        throw new InvalidRequestError(
          `purpose: '${f.purpose}' is not supported by this service; files are for batches (purpose "batch").`,
          'purpose',
        );
      if (f.data.length === 0) throw new InvalidRequestError('file: the file is empty.', 'file');
      if (f.data.length > limits.maxBytes)
        throw new InvalidRequestError(
          `file: ${f.data.length} bytes is more than a batch's input file may have (${limits.maxBytes}).`,
          'file',
        );
      const lines = countLines(f.data);
      if (lines > limits.maxLines)
        throw new InvalidRequestError(
          `file: ${lines} requests is more than a batch may have (${limits.maxLines}).`,
          'file',
        );
      const id = newId('file');
      const storageKey = `files/${id}/input.jsonl`;
      await store.put(storageKey, f.data, 'application/jsonl');
      return insertFile(pool, {
        id,
        accountId: principal.accountId,
        purpose: 'batch',
        filename: (f.filename || 'input.jsonl').slice(0, FILENAME_MAX),
        bytes: f.data.length,
        storageKey,
        lines,
        role: 'input',
        batchId: null,
      });
    },

    get: own,

    async list(
      principal: Principal,
      q: { limit: number; after?: string | undefined; purpose?: FilePurpose | undefined; order?: 'asc' | 'desc' },
    ): Promise<{ data: FileRow[]; hasMore: boolean }> {
      const rows = await listFiles(pool, principal.accountId, { ...q, limit: q.limit + 1 });
      return { data: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await own(principal, id);
      await deleteFile(pool, principal.accountId, id);
    },

    /** What a file holds: its bytes, or (an output or error file) the batch to render it from. */
    async content(principal: Principal, id: string): Promise<FileContent> {
      const file = await own(principal, id);
      if (file.role === 'input') {
        const data = file.storageKey ? await store.get(file.storageKey) : undefined;
        if (!data) throw new NotFoundError(`File ${id} has no content any more.`, { param: 'id' });
        return { file, data };
      }
      const batch = file.batchId ? await getBatch(pool, principal.accountId, file.batchId) : undefined;
      if (!batch) throw new NotFoundError(`File ${id} has no content any more.`, { param: 'id' });
      return { file, batch, role: file.role };
    },

    /** An output or error file's size, once it has been rendered. */
    recordBytes: (id: string, bytes: number): Promise<void> => setFileBytes(pool, id, bytes),

    /** An input file's bytes, for a batch about to be made from it. */
    async input(principal: Principal, id: string, param = 'input_file_id'): Promise<{ file: FileRow; data: Buffer }> {
      const file = await own(principal, id).catch((err: unknown) => {
        throw err instanceof NotFoundError ? new NotFoundError(`No such File object: ${id}`, { param }) : err;
      });
      if (file.purpose !== 'batch' || file.role !== 'input')
        throw new InvalidRequestError(
          `${param}: file ${id} was not uploaded with purpose "batch"; a batch reads an uploaded input file.`,
          param,
        );
      const data = file.storageKey ? await store.get(file.storageKey) : undefined;
      if (!data) throw new NotFoundError(`File ${id} has no content any more.`, { param });
      return { file, data };
    },
  };
}

export type FileService = ReturnType<typeof createFileService>;
