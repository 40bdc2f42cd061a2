import type pg from 'pg';
import { BATCH_COLUMNS } from '../db/batches';
import type { BatchRow, LineRequest } from '../db/batches';
import { fromRow, GENERATION_COLUMNS } from '../db/generations';
import type { GenerationDbRow, GenerationRow } from '../db/generations';
import { STATUS_CHANNEL } from '../db/notify';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import { newId } from '../ids';
import { metrics } from '../metrics';
import type { Millicredits } from '../money';
import type { BatchStatus, GenerationKind } from '../vocabulary';
import { classified } from './failures';
import { ledgerSpan } from './span';

/** How many of a batch's lines may be in flight at once. */
export interface LineLimits {
  /** Generations of this batch queued or running. */
  perBatch: number;
  /** Generations of all the account's batches queued or running. */
  perAccount: number;
}

export interface LinesAdmission {
  /** `started`: this claim has generations (new, or the same ones again); `none`: nothing to start now. */
  outcome: 'started' | 'none';
  /** Where the batch stands: a batch no longer `in_progress` (or past its window) starts nothing. */
  status: BatchStatus;
  stopping: BatchRow['stopping'];
  expired: boolean;
  /** The generations this claim started (the same ones again for a repeated claim). */
  generations: GenerationRow[];
  /** Lines not started yet, after this claim. */
  waiting: number;
  /** Generations of the batch in flight, after this claim. */
  inFlight: number;
}

/**
 * Starts up to as many of a batch's waiting lines as its limits leave room for, in file order, in
 * one transaction: each becomes its generations (queued, carrying the batch and line), each
 * generation's hold taken out of the batch's (the account does not move: it held them already).
 * `claim` names this step of the batch's workflow: a step retried after its transaction committed
 * gets the same generations back and starts nothing more, so no line runs twice. Lines of one
 * account's batches take turns on a lock of the account, so the account-wide limit holds.
 */
export function admitBatchLines(
  pool: pg.Pool,
  req: { batchId: string; claim: string; limits: LineLimits },
): Promise<LinesAdmission> {
  return ledgerSpan('admit batch lines', { 'gensvc.batch_id': req.batchId }, () =>
    classified(() => inTransaction(pool, (tx) => admitLinesIn(tx, req))),
  );
}

async function admitLinesIn(
  tx: Queryable,
  req: { batchId: string; claim: string; limits: LineLimits },
): Promise<LinesAdmission> {
  const b = await tx.query<BatchRow & { expired: boolean }>(
    `SELECT ${BATCH_COLUMNS}, expires_at <= now() AS expired FROM batches WHERE id = $1 FOR UPDATE`,
    [req.batchId],
  );
  const batch = b.rows[0];
  if (!batch) throw new Error(`batch ${req.batchId} not found`);
  const state = async (generations: GenerationRow[]): Promise<LinesAdmission> => {
    const c = await tx.query<{ waiting: number; in_flight: number }>(
      `SELECT (SELECT count(*) FROM batch_lines WHERE batch_id = $1 AND claim IS NULL AND outcome IS NULL)::int AS waiting,
              (SELECT count(*) FROM generations WHERE batch_id = $1 AND status IN ('queued', 'running'))::int AS in_flight`,
      [req.batchId],
    );
    return {
      outcome: generations.length > 0 ? 'started' : 'none',
      status: batch.status,
      stopping: batch.stopping,
      expired: batch.expired,
      generations,
      waiting: c.rows[0]!.waiting,
      inFlight: c.rows[0]!.in_flight,
    };
  };

  const again = await tx.query<GenerationDbRow>(
    `SELECT ${GENERATION_COLUMNS} FROM generations
      WHERE id = ANY (SELECT unnest(generation_ids) FROM batch_lines WHERE batch_id = $1 AND claim = $2) ORDER BY id`,
    [req.batchId, req.claim],
  );
  if (again.rows.length > 0) return state(again.rows.map(fromRow));
  if (batch.status !== 'in_progress' || batch.stopping !== null || batch.expired) return state([]);

  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('gensvc-batch-lines:' || $1, 0))`, [batch.accountId]);
  const live = await tx.query<{ batch: number; account: number }>(
    `SELECT (SELECT count(*) FROM generations WHERE batch_id = $1 AND status IN ('queued', 'running'))::int AS batch,
            (SELECT count(*) FROM generations WHERE account_id = $2 AND batch_id IS NOT NULL AND status IN ('queued', 'running'))::int AS account`,
    [req.batchId, batch.accountId],
  );
  const room = Math.min(req.limits.perBatch - live.rows[0]!.batch, req.limits.perAccount - live.rows[0]!.account);
  if (room <= 0) return state([]);

  const waiting = await tx.query<{ line: number; request: LineRequest; quote_mc: number }>(
    `SELECT line, request, quote_mc FROM batch_lines
      WHERE batch_id = $1 AND claim IS NULL AND outcome IS NULL ORDER BY line LIMIT $2`,
    [req.batchId, room],
  );
  if (waiting.rows.length === 0) return state([]);

  const { rows, lines, takenMc } = generationsOfLines(waiting.rows);
  const taken = await tx.query(
    `UPDATE batches SET held_mc = held_mc - $2::bigint, updated_at = now() WHERE id = $1 AND held_mc >= $2::bigint`,
    [req.batchId, takenMc],
  );
  if ((taken.rowCount ?? 0) === 0) throw new Error(`batch ${req.batchId}: its lines want more than it holds`);
  // The three inserts in one statement: the foreign keys between them hold at its end.
  const inserted = await tx.query<GenerationDbRow>(
    `WITH x AS (
       SELECT r.*, row_number() OVER () AS ord FROM jsonb_to_recordset($1::jsonb)
         AS r (id text, kind text, model text, params jsonb, internal jsonb, prompt text, quote_mc bigint, batch_line integer)
     ), change AS (
       -- One change number per line, taken together: the account's stream resumes exactly over them.
       UPDATE accounts SET change_seq = change_seq + $5 WHERE id = $2 RETURNING change_seq - $5 AS base
     ), g AS (
       INSERT INTO generations (id, account_id, api_key_id, kind, model, status, params, internal, prompt, quote_mc, free_chat,
                                batch_id, batch_line, change_seq)
       SELECT x.id, $2, $3, x.kind, x.model, 'queued', x.params, x.internal, x.prompt, x.quote_mc, false, $4, x.batch_line,
              (SELECT base FROM change) + x.ord
         FROM x
       RETURNING id, account_id, api_key_id, customer_id, kind, model, status, params, internal, prompt, quote_mc, charged_mc,
                 free_chat, output_key, output_text, error, created_at, started_at, finished_at, batch_id, batch_line, token_usage
     ), h AS (
       INSERT INTO holds (generation_id, account_id, amount_mc, free_chat) SELECT x.id, $2, x.quote_mc, false FROM x
     )
     SELECT g.*, pg_notify('${STATUS_CHANNEL}', g.account_id || ':' || g.id || ':queued') FROM g`,
    [JSON.stringify(rows), batch.accountId, batch.apiKeyId, req.batchId, rows.length],
  );
  await tx.query(
    `UPDATE batch_lines l SET claim = $2, generation_ids = x.ids
       FROM jsonb_to_recordset($3::jsonb) AS x (line integer, ids text[])
      WHERE l.batch_id = $1 AND l.line = x.line`,
    [req.batchId, req.claim, JSON.stringify(lines)],
  );
  metrics.admissions.inc({ kind: batch.kind }, rows.length);
  return state(inserted.rows.map((r) => fromRow({ ...r, preview_keys: null, served_by: null })));
}

/** A generation row as the statement that starts lines inserts it (jsonb_to_recordset). */
interface LineGeneration {
  id: string;
  kind: GenerationKind;
  model: string;
  params: unknown;
  internal: unknown;
  prompt: string;
  quote_mc: number;
  batch_line: number;
}

/**
 * The generations the waiting lines become, with new ids (a line of several generations marks
 * them siblings of its first), each line's ids, and what they take of the batch's hold.
 */
function generationsOfLines(waiting: readonly { line: number; request: LineRequest }[]): {
  rows: LineGeneration[];
  lines: { line: number; ids: string[] }[];
  takenMc: Millicredits;
} {
  const rows: LineGeneration[] = [];
  const lines: { line: number; ids: string[] }[] = [];
  let takenMc = 0;
  for (const l of waiting) {
    const ids = l.request.generations.map(() => newId('gen'));
    const several = ids.length > 1;
    l.request.generations.forEach((g, index) => {
      rows.push({
        id: ids[index]!,
        kind: g.kind,
        model: g.model,
        params: g.params,
        internal: several ? { ...g.internal, siblings: { firstId: ids[0]!, index } } : g.internal,
        prompt: g.prompt,
        quote_mc: g.quoteMc,
        batch_line: l.line,
      });
      takenMc += g.quoteMc;
    });
    lines.push({ line: l.line, ids });
  }
  return { rows, lines, takenMc };
}
