import type { Queryable } from './pool';

/**
 * Files of the Batch API: an uploaded input file (its bytes in the output store, `storageKey`) or a
 * batch's output or error file (rendered from the batch's lines when read). A deleted file keeps
 * its row (batches name it) but is gone for every read.
 */
export type FilePurpose = 'batch' | 'batch_output';

export interface FileRow {
  id: string;
  accountId: string;
  purpose: FilePurpose;
  filename: string;
  /** Null for an output file not read yet. */
  bytes: number | null;
  storageKey: string | null;
  lines: number | null;
  /** `input`: uploaded; `output`, `errors`: a batch's results (`batchId`), rendered when read. */
  role: 'input' | 'output' | 'errors';
  batchId: string | null;
  createdAt: Date;
}

const FILE_COLUMNS = `id, account_id AS "accountId", purpose, filename, bytes, storage_key AS "storageKey", lines, role,
  batch_id AS "batchId", created_at AS "createdAt"`;

export async function insertFile(q: Queryable, f: Omit<FileRow, 'createdAt'>): Promise<FileRow> {
  const r = await q.query<FileRow>(
    `INSERT INTO files (id, account_id, purpose, filename, bytes, storage_key, lines, role, batch_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${FILE_COLUMNS}`,
    [f.id, f.accountId, f.purpose, f.filename, f.bytes, f.storageKey, f.lines, f.role, f.batchId],
  );
  return r.rows[0]!;
}

/** One of the account's files that is not deleted; anything else reads as not found. */
export async function getFile(q: Queryable, accountId: string, id: string): Promise<FileRow | undefined> {
  const r = await q.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM files WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
    [id, accountId],
  );
  return r.rows[0];
}

/** An account's files, newest first (or oldest with `asc`), keyset-paged by id (ids are time-ordered). */
export async function listFiles(
  q: Queryable,
  accountId: string,
  f: { limit: number; after?: string | undefined; purpose?: FilePurpose | undefined; order?: 'asc' | 'desc' },
): Promise<FileRow[]> {
  const asc = f.order === 'asc';
  const r = await q.query<FileRow>(
    `SELECT ${FILE_COLUMNS} FROM files
      WHERE account_id = $1 AND deleted_at IS NULL
        AND ($2::text IS NULL OR id ${asc ? '>' : '<'} $2) AND ($3::text IS NULL OR purpose = $3)
      ORDER BY id ${asc ? 'ASC' : 'DESC'} LIMIT $4`,
    [accountId, f.after ?? null, f.purpose ?? null, f.limit],
  );
  return r.rows;
}

/** Marks a file deleted; false when it was not the account's or already gone. */
export async function deleteFile(q: Queryable, accountId: string, id: string): Promise<boolean> {
  const r = await q.query(
    'UPDATE files SET deleted_at = now() WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL',
    [id, accountId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** An output file's size, once it has been rendered. */
export async function setFileBytes(q: Queryable, id: string, bytes: number): Promise<void> {
  await q.query('UPDATE files SET bytes = $2 WHERE id = $1 AND bytes IS NULL', [id, bytes]);
}
