import type pg from 'pg';
import { BATCH_COLUMNS, countsOfBatch } from '../db/batches';
import type { BatchCounts, BatchProblem, BatchRow, LineRequest } from '../db/batches';
import { insertFile } from '../db/files';
import { claimIdempotencyKey } from '../db/idempotency';
import { STATUS_CHANNEL } from '../db/notify';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import { insertJobCallback } from '../db/webhook-endpoints';
import { IdempotencyConflictError } from '../errors';
import { newId } from '../ids';
import { metrics } from '../metrics';
import { mcToCredits } from '../money';
import type { Millicredits } from '../money';
import { batchFormatOf } from '../vocabulary';
import type { BatchEndpoint, BatchStatus, GenerationKind } from '../vocabulary';
import type { JobCallback } from '../webhooks/job-callbacks';
import { recordBalanceLow } from './alerts';
import { afterKeyHold, checkKeyBudget, keyBudgetRefusal, keyBudgetRefused } from './key-budgets';
import type { KeyBudgetRefusal } from './key-budgets';
import type { KeyedRequest } from './admit';
import { appendEntry, moveAccount } from './entries';
import type { AccountMoney } from './entries';
import { classified } from './failures';
import { recordBatchEvent } from './outbox';
import { ledgerSpan } from './span';

/**
 * A batch's money and status (docs/decisions/0071-batch-money.md), each step one transaction:
 *
 *   holdBatch: the whole quote held in one movement (one `hold` entry naming the batch), its lines recorded
 *   admitBatchLines: lines start; each takes its share of the batch's hold into holds of its generations
 *     (no account movement), which then settle or release like any generation (core/ledger/resolve.ts)
 *   stopBatch: a cancel or the end of the window; what no line took is released (one `release` entry)
 *   finishBatch: every line ended: the batch's final status, its output and error files, its webhooks
 *
 * At every moment accounts.held_mc = Σ holds held + Σ batches.held_mc.
 */

/** A batch validated and priced, about to be held. */
export interface NewBatch {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  endpoint: BatchEndpoint;
  kind: GenerationKind;
  /** The uploaded file its lines came from; null when they came inline (Anthropic's Message Batches). */
  inputFileId: string | null;
  metadata: Record<string, string> | null;
  /** How long after its creation it expires (its `expires_at` is its `created_at` plus this, exactly). */
  completionWindowMs: number;
  lines: { line: number; customId: string; request: LineRequest; quoteMc: Millicredits }[];
  /** The key has a budget: the whole batch is checked against it, the key's budget row locked. */
  budgeted: boolean;
  /** The batch's own callback URL (checked before): recorded with it, so its events reach it. */
  callback?: JobCallback | undefined;
  /** Its Idempotency-Key: claimed with the hold, so that a repeat finds this batch and holds nothing. */
  keyed?: KeyedRequest | undefined;
}

/** Records a batch's callback in the transaction that records the batch, before any of its events. */
async function recordCallback(tx: Queryable, b: Pick<NewBatch, 'id' | 'accountId' | 'callback'>): Promise<void> {
  if (b.callback)
    await insertJobCallback(tx, { id: newId('wh'), accountId: b.accountId, ...b.callback, job: { batchId: b.id } });
}

export type BatchHold =
  | { outcome: 'held'; batch: BatchRow }
  /** An Idempotency-Key repeat: the batch its first request made; nothing held now. */
  | { outcome: 'repeat'; batchId: string }
  /** Too little money for the whole batch: nothing was held or recorded. */
  | { outcome: 'refused'; requiredMc: Millicredits; availableMc: Millicredits }
  /** The key's budget has too little left for the whole batch: nothing was held. */
  | KeyBudgetRefusal;

/** Announces a batch's change on the ledger's channel (`<account>:<batch>:batch`) when the statement commits. */
const notifyBatch = (accountExpr: string, batchExpr: string): string =>
  `pg_notify('${STATUS_CHANNEL}', ${accountExpr} || ':' || ${batchExpr} || ':batch')`;

class Refused extends Error {
  constructor(
    readonly refusal: Exclude<BatchHold, { outcome: 'held' }>,
    /** Records the alert of the budget that refused, once the refusal has rolled back. */
    readonly budgetReached?: (tx: Queryable) => Promise<void>,
  ) {
    super('refused');
  }
}

/**
 * Holds a batch's whole quote and records it `in_progress` with its lines, in one transaction: the
 * account's conditional update (no overdraft), the batch and its lines, one `hold` entry. A refusal
 * (money, the key's budget) rolls everything back: nothing held, nothing recorded.
 */
export function holdBatch(pool: pg.Pool, b: NewBatch): Promise<BatchHold> {
  return ledgerSpan('hold batch', { 'gensvc.batch_id': b.id, 'gensvc.lines': b.lines.length }, async () => {
    const quoteMc = b.lines.reduce((sum, l) => sum + l.quoteMc, 0);
    try {
      const held = await classified(() => inTransaction(pool, (tx) => holdIn(tx, b, quoteMc)));
      if (held.outcome === 'held') metrics.creditsHeld.inc(mcToCredits(quoteMc));
      return held;
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      const reached = err.budgetReached;
      if (reached) await inTransaction(pool, reached).catch(() => undefined);
      return err.refusal;
    }
  });
}

async function holdIn(tx: Queryable, b: NewBatch, quoteMc: Millicredits): Promise<BatchHold> {
  if (b.keyed) {
    const claim = await claimIdempotencyKey(tx, { ...b.keyed, job: { batchId: b.id } });
    if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
    if (claim.outcome === 'repeat') return { outcome: 'repeat', batchId: claim.id };
  }
  const hold = { ...b, quoteMc };
  const keyBudget = await checkKeyBudget(tx, hold);
  if (!keyBudget.fits)
    throw new Refused(
      keyBudgetRefusal(keyBudget.keyId, keyBudget.budget, quoteMc, 0),
      keyBudgetRefused(b.accountId, keyBudget.keyId, keyBudget.budget),
    );
  const moved = await tx.query<AccountMoney>(
    `UPDATE accounts SET held_mc = held_mc + $2::bigint WHERE id = $1 AND balance_mc - held_mc >= $2::bigint
     RETURNING balance_mc, held_mc`,
    [b.accountId, quoteMc],
  );
  const after = moved.rows[0];
  if (!after) {
    const r = await tx.query<{ available_mc: number }>(
      'SELECT balance_mc - held_mc AS available_mc FROM accounts WHERE id = $1',
      [b.accountId],
    );
    throw new Refused({ outcome: 'refused', requiredMc: quoteMc, availableMc: r.rows[0]?.available_mc ?? 0 });
  }
  const inserted = await tx.query<BatchRow>(
    `INSERT INTO batches (id, account_id, api_key_id, endpoint, kind, input_file_id, completion_window, metadata, status,
                          total, quote_mc, held_mc, in_progress_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, '24h', $7, 'in_progress', $8, $9::bigint, $9::bigint, now(),
             now() + make_interval(secs => $10::double precision / 1000))
     RETURNING ${BATCH_COLUMNS}, ${notifyBatch('account_id', 'id')}`,
    [
      b.id,
      b.accountId,
      b.apiKeyId,
      b.endpoint,
      b.kind,
      b.inputFileId,
      b.metadata,
      b.lines.length,
      quoteMc,
      b.completionWindowMs,
    ],
  );
  await tx.query(
    `INSERT INTO batch_lines (batch_id, line, custom_id, request, quote_mc)
     SELECT $1, x.line, x.custom_id, x.request, x.quote_mc
       FROM jsonb_to_recordset($2::jsonb) AS x (line integer, custom_id text, request jsonb, quote_mc bigint)`,
    [
      b.id,
      JSON.stringify(
        b.lines.map((l) => ({ line: l.line, custom_id: l.customId, request: l.request, quote_mc: l.quoteMc })),
      ),
    ],
  );
  await appendEntry(tx, {
    accountId: b.accountId,
    generationId: null,
    batchId: b.id,
    entry: 'hold',
    amountMc: quoteMc,
    after,
    note: `batch of ${b.lines.length} ${b.lines.length === 1 ? 'line' : 'lines'}`,
  });
  await recordCallback(tx, b);
  await recordBalanceLow(tx, b.accountId);
  await afterKeyHold(tx, hold, keyBudget.budget);
  return { outcome: 'held', batch: inserted.rows[0]! };
}

/**
 * A batch that failed validation: recorded `failed` with what was wrong, nothing held, and its
 * `batch.failed` webhooks owed, in one transaction.
 */
export async function recordFailedBatch(
  pool: pg.Pool,
  b: Omit<NewBatch, 'lines' | 'budgeted' | 'completionWindowMs'> & { total: number; errors: BatchProblem[] },
): Promise<BatchRow> {
  return classified(() =>
    inTransaction(pool, async (tx) => {
      const r = await tx.query<BatchRow>(
        `INSERT INTO batches (id, account_id, api_key_id, endpoint, kind, input_file_id, completion_window, metadata, status,
                              errors, total, failed_at)
         VALUES ($1, $2, $3, $4, $5, $6, '24h', $7, 'failed', $8, $9, now())
         RETURNING ${BATCH_COLUMNS}, ${notifyBatch('account_id', 'id')}`,
        [
          b.id,
          b.accountId,
          b.apiKeyId,
          b.endpoint,
          b.kind,
          b.inputFileId,
          b.metadata,
          JSON.stringify(b.errors),
          b.total,
        ],
      );
      const batch = r.rows[0]!;
      await recordCallback(tx, b);
      await recordBatchEvent(tx, batch, 'batch.failed');
      return batch;
    }),
  );
}

/** Asks a running batch to stop and end `cancelled`: it shows `cancelling` until its lines have stopped. */
export async function requestBatchCancel(
  pool: pg.Pool,
  accountId: string,
  batchId: string,
): Promise<BatchRow | undefined> {
  const r = await pool.query<BatchRow>(
    `UPDATE batches SET status = 'cancelling', stopping = 'cancelled', cancelling_at = now(), updated_at = now()
      WHERE id = $1 AND account_id = $2 AND status = 'in_progress'
      RETURNING ${BATCH_COLUMNS}, ${notifyBatch('account_id', 'id')}`,
    [batchId, accountId],
  );
  return r.rows[0];
}

export type BatchStop =
  | { outcome: 'stopping'; stopping: 'cancelled' | 'expired'; live: string[]; releasedMc: Millicredits }
  | { outcome: 'already'; status: BatchStatus };

/**
 * Stops a batch (a cancel, or the end of its completion window; a cancel asked first wins): the
 * lines that never started are marked so, what the batch still held for them is released (one
 * `release` entry naming the batch), and the generations still in flight are answered, for the
 * workflow to cancel. Repeatable: a second call releases nothing more.
 */
export function stopBatch(
  pool: pg.Pool,
  req: { batchId: string; outcome: 'cancelled' | 'expired' },
): Promise<BatchStop> {
  return ledgerSpan('stop batch', { 'gensvc.batch_id': req.batchId }, () =>
    classified(() =>
      inTransaction(pool, async (tx): Promise<BatchStop> => {
        const b = await tx.query<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1 FOR UPDATE`, [
          req.batchId,
        ]);
        const batch = b.rows[0];
        if (!batch) throw new Error(`batch ${req.batchId} not found`);
        if (batch.status !== 'in_progress' && batch.status !== 'cancelling')
          return { outcome: 'already', status: batch.status };
        const stopping = batch.stopping ?? req.outcome;
        await tx.query(
          `UPDATE batches SET stopping = $2, held_mc = 0, updated_at = now(),
                  status = CASE WHEN $2 = 'cancelled' THEN 'cancelling' ELSE status END,
                  cancelling_at = CASE WHEN $2 = 'cancelled' THEN COALESCE(cancelling_at, now()) ELSE cancelling_at END
            WHERE id = $1 RETURNING ${notifyBatch('account_id', 'id')}`,
          [req.batchId, stopping],
        );
        const releasedMc = await releaseRest(tx, batch, `batch ${stopping}`);
        await tx.query(
          `UPDATE batch_lines SET outcome = $2 WHERE batch_id = $1 AND claim IS NULL AND outcome IS NULL`,
          [req.batchId, stopping],
        );
        const live = await tx.query<{ id: string }>(
          `SELECT id FROM generations WHERE batch_id = $1 AND status IN ('queued', 'running') ORDER BY id`,
          [req.batchId],
        );
        return { outcome: 'stopping', stopping, live: live.rows.map((x) => x.id), releasedMc };
      }),
    ),
  );
}

/** Releases what a batch still holds for lines that will not run; 0 when nothing is left. */
async function releaseRest(tx: Queryable, batch: BatchRow, note: string): Promise<Millicredits> {
  if (batch.heldMc <= 0) return 0;
  const after = await moveAccount(tx, batch.accountId, { heldDelta: -batch.heldMc, balanceDelta: 0 });
  await tx.query('UPDATE batches SET held_mc = 0 WHERE id = $1', [batch.id]);
  await appendEntry(tx, {
    accountId: batch.accountId,
    generationId: null,
    batchId: batch.id,
    entry: 'release',
    amountMc: batch.heldMc,
    after,
    note,
  });
  metrics.creditsReleased.inc(mcToCredits(batch.heldMc));
  return batch.heldMc;
}

export type BatchFinish =
  | { outcome: 'finished'; batch: BatchRow; counts: BatchCounts }
  /** Lines are still waiting or in flight: nothing changed. */
  | { outcome: 'running'; waiting: number; inFlight: number }
  /** Ended before (by this step, whose answer was lost and is asked again): its counts as they ended. */
  | { outcome: 'already'; batch: BatchRow; counts: BatchCounts };

const FINAL_EVENT = { completed: 'batch.completed', cancelled: 'batch.cancelled', expired: 'batch.expired' } as const;

/**
 * Ends a batch whose every line has ended, in one transaction: anything it still held is released,
 * (OpenAI's format) its output file (the lines that succeeded) and error file (the others) are recorded, its final
 * status set (`completed`, or how it was stopped) and its webhooks owed. A batch with lines still
 * waiting or in flight is left as it is.
 */
export function finishBatch(pool: pg.Pool, batchId: string): Promise<BatchFinish> {
  return ledgerSpan('finish batch', { 'gensvc.batch_id': batchId }, () =>
    classified(() =>
      inTransaction(pool, async (tx): Promise<BatchFinish> => {
        const b = await tx.query<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM batches WHERE id = $1 FOR UPDATE`, [batchId]);
        const batch = b.rows[0];
        if (!batch) throw new Error(`batch ${batchId} not found`);
        const counts = await countsOfBatch(tx, batchId);
        if (batch.status !== 'in_progress' && batch.status !== 'cancelling')
          return { outcome: 'already', batch, counts };
        if (counts.waiting > 0 || counts.running > 0)
          return { outcome: 'running', waiting: counts.waiting, inFlight: counts.running };
        await releaseRest(tx, batch, 'batch finished');
        const status = batch.stopping ?? 'completed';
        const fileOf = async (role: 'output' | 'errors') =>
          (
            await insertFile(tx, {
              id: newId('file'),
              accountId: batch.accountId,
              purpose: 'batch_output',
              filename: `${batch.id}_${role === 'output' ? 'output' : 'error'}.jsonl`,
              bytes: null,
              storageKey: null,
              lines: role === 'output' ? counts.completed : counts.failed,
              role,
              batchId: batch.id,
            })
          ).id;
        // OpenAI's format answers with files of the Files API; Anthropic's with one results file of its own.
        const files = batchFormatOf(batch.endpoint) === 'openai';
        const outputFileId = files && counts.completed > 0 ? await fileOf('output') : null;
        const errorFileId = files && counts.failed > 0 ? await fileOf('errors') : null;
        const done = await tx.query<BatchRow>(
          `UPDATE batches SET status = $2, output_file_id = $3, error_file_id = $4, updated_at = now(),
                  finalizing_at = CASE WHEN $2 = 'completed' THEN now() END,
                  completed_at = CASE WHEN $2 = 'completed' THEN now() END,
                  cancelled_at = CASE WHEN $2 = 'cancelled' THEN now() END,
                  expired_at = CASE WHEN $2 = 'expired' THEN now() END
            WHERE id = $1 RETURNING ${BATCH_COLUMNS}, ${notifyBatch('account_id', 'id')}`,
          [batchId, status, outputFileId, errorFileId],
        );
        const finished = done.rows[0]!;
        await recordBatchEvent(tx, finished, FINAL_EVENT[status]);
        return { outcome: 'finished', batch: finished, counts };
      }),
    ),
  );
}
