import { fromRow, GENERATION_COLUMNS } from './generations';
import type { GenerationDbRow, GenerationRow } from './generations';
import type { Queryable } from './pool';
import type { InternalParams, PublicParams } from '../generation/params';
import type { Millicredits } from '../money';
import { ANTHROPIC_BATCH_ENDPOINT, FINAL_BATCH_STATUSES } from '../vocabulary';
import type { BatchEndpoint, BatchFormat, BatchStatus, GenerationKind } from '../vocabulary';

/**
 * Batches and their lines, as rows. Money and status move in core/ledger/batches.ts; this file
 * reads (and the ledger writes through the statements it owns there), and deletes an ended batch
 * for its owner: gone for every door, its lines' generations and ledger entries kept.
 */

/** One generation a line runs, priced at the batch rate: what its hold will be and what runs. */
export interface LineGeneration {
  kind: GenerationKind;
  model: string;
  prompt: string;
  params: PublicParams;
  internal: InternalParams;
  quoteMc: Millicredits;
}

/** What a line runs: its generations (group B's `n` images are several), stored with the line. */
export interface LineRequest {
  generations: LineGeneration[];
  /** What the line's door needs besides the records to answer as its endpoint would. */
  answer?: LineAnswerHints;
}

export interface LineAnswerHints {
  /** Images: `b64_json` answers the files themselves. */
  responseFormat?: 'url' | 'b64_json';
}

/** A validation problem as a batch's `errors` lists it. */
export interface BatchProblem {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchRow {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  endpoint: BatchEndpoint;
  kind: GenerationKind;
  /** The uploaded file its lines came from; null for a batch whose requests came inline (Anthropic's). */
  inputFileId: string | null;
  completionWindow: string;
  metadata: Record<string, string> | null;
  status: BatchStatus;
  /** How a batch told to stop will end; null while it runs to its end. */
  stopping: 'cancelled' | 'expired' | null;
  errors: BatchProblem[] | null;
  total: number;
  quoteMc: Millicredits;
  /** The part of its hold no line has taken yet. */
  heldMc: Millicredits;
  outputFileId: string | null;
  errorFileId: string | null;
  createdAt: Date;
  inProgressAt: Date | null;
  expiresAt: Date | null;
  finalizingAt: Date | null;
  completedAt: Date | null;
  failedAt: Date | null;
  expiredAt: Date | null;
  cancellingAt: Date | null;
  cancelledAt: Date | null;
}

export const BATCH_COLUMNS = `id, account_id AS "accountId", api_key_id AS "apiKeyId", endpoint, kind, input_file_id AS "inputFileId",
  completion_window AS "completionWindow", metadata, status, stopping, errors, total, quote_mc AS "quoteMc", held_mc AS "heldMc",
  output_file_id AS "outputFileId", error_file_id AS "errorFileId", created_at AS "createdAt", in_progress_at AS "inProgressAt",
  expires_at AS "expiresAt", finalizing_at AS "finalizingAt", completed_at AS "completedAt", failed_at AS "failedAt",
  expired_at AS "expiredAt", cancelling_at AS "cancellingAt", cancelled_at AS "cancelledAt"`;

/** Where a batch's lines stand: `completed` and `failed` as request_counts says, and the rest. */
export interface BatchCounts {
  completed: number;
  failed: number;
  /** Started and not finished. */
  running: number;
  /** Not started yet. */
  waiting: number;
  /** Of the failed: those its stop (a cancel, or the end of its window) kept from running or cut short. */
  cancelled: number;
  expired: number;
  /** What its finished lines were charged. */
  chargedMc: Millicredits;
}

export const NO_BATCH_COUNTS: BatchCounts = {
  completed: 0,
  failed: 0,
  running: 0,
  waiting: 0,
  cancelled: 0,
  expired: 0,
  chargedMc: 0,
};

/** Which batches a door shows: every one (group A, the dashboard), or those of its own format. */
const FORMAT_FILTER = `($2::text IS NULL OR (endpoint = '${ANTHROPIC_BATCH_ENDPOINT}') = ($2::text = 'anthropic'))`;

/** One of the account's batches; another account's, or one deleted, reads as not found. */
export async function getBatch(q: Queryable, accountId: string, id: string): Promise<BatchRow | undefined> {
  const r = await q.query<BatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
    [id, accountId],
  );
  return r.rows[0];
}

/** A batch by id alone (the batch's own workflow, the reconciler). */
export async function getBatchById(q: Queryable, id: string): Promise<BatchRow | undefined> {
  const r = await q.query<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1`, [id]);
  return r.rows[0];
}

/**
 * An account's batches, newest first, keyset-paged by id (ids are time-ordered): those older than
 * `after`, or (`before`) the newer ones just above `before`. `format` keeps one format's.
 */
export async function listBatches(
  q: Queryable,
  accountId: string,
  f: { limit: number; after?: string | undefined; before?: string | undefined; format?: BatchFormat | undefined },
): Promise<BatchRow[]> {
  const newer = f.before !== undefined;
  const r = await q.query<BatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM batches
      WHERE account_id = $1 AND deleted_at IS NULL AND ${FORMAT_FILTER}
        AND ($3::text IS NULL OR id < $3) AND ($4::text IS NULL OR id > $4)
      ORDER BY id ${newer ? 'ASC' : 'DESC'} LIMIT $5`,
    [accountId, f.format ?? null, f.after ?? null, f.before ?? null, f.limit],
  );
  return newer ? r.rows.reverse() : r.rows;
}

/** Deletes an ended batch of the account: true when it did; a running one is left as it is. */
export async function deleteEndedBatch(q: Queryable, accountId: string, id: string): Promise<boolean> {
  const r = await q.query(
    `UPDATE batches SET deleted_at = now(), updated_at = now()
      WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL AND status = ANY($3::text[])`,
    [id, accountId, [...FINAL_BATCH_STATUSES]],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Where each line of the batches stands. A line is completed when it has ended and one of its
 * generations succeeded (group B's `n` images answer 200 when one did), failed when all of them
 * failed or it never ran because the batch stopped first.
 */
export async function batchCounts(q: Queryable, batchIds: readonly string[]): Promise<Map<string, BatchCounts>> {
  if (batchIds.length === 0) return new Map();
  const r = await q.query<BatchCounts & { batch_id: string }>(
    `WITH lines AS (
       SELECT l.batch_id, l.line, l.outcome, l.claim, b.stopping,
              bool_or(g.status IN ('queued', 'running')) AS live,
              bool_or(g.status = 'succeeded') AS ok,
              -- Stopped in flight: every generation cancelled, or released because another choice of its line was.
              COALESCE(bool_and(g.status = 'failed' AND g.error->>'code' IN ('cancelled', 'choice_failed'))
                       AND bool_or(g.error->>'code' = 'cancelled'), false) AS stopped,
              COALESCE(sum(g.charged_mc), 0) AS charged
         FROM batch_lines l JOIN batches b ON b.id = l.batch_id
              LEFT JOIN generations g ON g.batch_id = l.batch_id AND g.batch_line = l.line
        WHERE l.batch_id = ANY($1::text[])
        GROUP BY l.batch_id, l.line, l.outcome, l.claim, b.stopping),
     ended AS (
       SELECT *, COALESCE(outcome, CASE WHEN claim IS NOT NULL AND NOT live AND NOT ok AND stopped THEN stopping END) AS stopped_as
         FROM lines)
     SELECT batch_id,
            count(*) FILTER (WHERE claim IS NOT NULL AND NOT live AND ok)::int AS completed,
            count(*) FILTER (WHERE outcome IS NOT NULL OR (claim IS NOT NULL AND NOT live AND NOT ok))::int AS failed,
            count(*) FILTER (WHERE claim IS NOT NULL AND live)::int AS running,
            count(*) FILTER (WHERE claim IS NULL AND outcome IS NULL)::int AS waiting,
            count(*) FILTER (WHERE stopped_as = 'cancelled')::int AS cancelled,
            count(*) FILTER (WHERE stopped_as = 'expired')::int AS expired,
            COALESCE(sum(charged), 0)::bigint AS "chargedMc"
       FROM ended GROUP BY batch_id`,
    [batchIds],
  );
  return new Map(r.rows.map(({ batch_id, ...c }) => [batch_id, c]));
}

/** One batch's counts (all zero for a batch without lines). */
export async function countsOfBatch(q: Queryable, batchId: string): Promise<BatchCounts> {
  return (await batchCounts(q, [batchId])).get(batchId) ?? NO_BATCH_COUNTS;
}

/** A line of a batch with the generations it became (none yet, or it never ran). */
export interface BatchLineRow {
  line: number;
  customId: string;
  outcome: 'cancelled' | 'expired' | null;
  answer: LineAnswerHints;
  /** In the line's request order (group B's `n` images). */
  generations: GenerationRow[];
}

/** A page of a batch's lines, in file order, after line `after`. */
export async function batchLinesPage(
  q: Queryable,
  batchId: string,
  page: { after: number; limit: number },
): Promise<BatchLineRow[]> {
  const lines = await q.query<{
    line: number;
    custom_id: string;
    outcome: BatchLineRow['outcome'];
    answer: LineAnswerHints | null;
  }>(
    `SELECT line, custom_id, outcome, request->'answer' AS answer FROM batch_lines
      WHERE batch_id = $1 AND line > $2 ORDER BY line LIMIT $3`,
    [batchId, page.after, page.limit],
  );
  const last = lines.rows.at(-1);
  if (!last) return [];
  const gens = await q.query<GenerationDbRow>(
    `SELECT ${GENERATION_COLUMNS} FROM generations
      WHERE batch_id = $1 AND batch_line > $2 AND batch_line <= $3
      ORDER BY batch_line, COALESCE((internal->'siblings'->>'index')::int, 0)`,
    [batchId, page.after, last.line],
  );
  const byLine = new Map<number, GenerationRow[]>();
  for (const row of gens.rows) {
    const g = fromRow(row);
    const list = byLine.get(g.batchLine!) ?? [];
    list.push(g);
    byLine.set(g.batchLine!, list);
  }
  return lines.rows.map((l) => ({
    line: l.line,
    customId: l.custom_id,
    outcome: l.outcome,
    answer: l.answer ?? {},
    generations: byLine.get(l.line) ?? [],
  }));
}

/** Batches still running (or cancelling) created before `olderThanMs` ago: the reconciler checks their workflows. */
export async function findLiveBatches(
  q: Queryable,
  olderThanMs: number,
  limit: number,
): Promise<Pick<BatchRow, 'id' | 'accountId' | 'expiresAt' | 'endpoint' | 'kind' | 'total'>[]> {
  const r = await q.query<Pick<BatchRow, 'id' | 'accountId' | 'expiresAt' | 'endpoint' | 'kind' | 'total'>>(
    `SELECT id, account_id AS "accountId", expires_at AS "expiresAt", endpoint, kind, total FROM batches
      WHERE status IN ('in_progress', 'cancelling') AND created_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY id LIMIT $2`,
    [olderThanMs, limit],
  );
  return r.rows;
}

/** Some of a batch's generations, by id (what a stop cancels). */
export async function batchGenerations(
  q: Queryable,
  batchId: string,
  ids: readonly string[],
): Promise<GenerationRow[]> {
  if (ids.length === 0) return [];
  const r = await q.query<GenerationDbRow>(
    `SELECT ${GENERATION_COLUMNS} FROM generations WHERE batch_id = $1 AND id = ANY($2::text[]) ORDER BY id`,
    [batchId, ids],
  );
  return r.rows.map(fromRow);
}
