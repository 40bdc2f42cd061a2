import type pg from 'pg';
import { inTransaction } from '../db/pool';
import type { Queryable } from '../db/pool';
import { metrics } from '../metrics';
import { mcToCredits } from '../money';
import { recordRoute } from '../db/upstreams';
import { tokenUsageColumn } from '../db/token-usage';
import type { GenerationFailure, GenerationKind } from '../vocabulary';
import { appendEntry, moveAccount } from './entries';
import { classified } from './failures';
import { notifyExpr, STATUS_CHANNEL, takeChange } from '../db/notify';
import { lineChoiceOf, releaseChoice, settleChoice } from './line-choices';
import type { ChoiceMoves } from './line-choices';
import { recordStatusEvent } from './outbox';
import type { Resolution, SettleRequest } from './resolution';
import { ledgerSpan } from './span';

/**
 * The hold becomes the charge (the unused part goes back), the generation `succeeded` with its
 * output, and its webhook deliveries are written: one transaction, once. A repeat finds the hold
 * moved and changes nothing. A chat choice of a batch line is charged with its line's others, all
 * or none (`waiting` until they have ended).
 */
export function settle(pool: pg.Pool, req: SettleRequest): Promise<Resolution> {
  return ledgerSpan('settle', { 'gensvc.generation_id': req.generationId }, async () => {
    const moves = choiceMoves();
    const resolution = await classified(() => inTransaction(pool, (tx) => settleIn(tx, req, moves)));
    moves.others.forEach(counted);
    return counted(resolution);
  });
}

/**
 * The hold goes back (a free reply's allowance too), the generation `failed` with `failure`: one
 * transaction, once. A chat choice of a batch line takes the choices of its line that wait with it.
 */
export function release(pool: pg.Pool, generationId: string, failure: GenerationFailure): Promise<Resolution> {
  return ledgerSpan('release', { 'gensvc.generation_id': generationId, 'gensvc.failure': failure.code }, async () => {
    const moves = choiceMoves();
    const resolution = await classified(() =>
      inTransaction(pool, async (tx) => {
        moves.others.length = 0;
        const released = await releaseHeld(tx, generationId, failure, ALONE);
        if (released) return released;
        const choice = await lineChoiceOf(tx, generationId);
        return choice ? releaseChoice(tx, choice, generationId, failure, moves) : alreadyResolved(tx, generationId);
      }),
    );
    moves.others.forEach(counted);
    return counted(resolution);
  });
}

const choiceMoves = (): ChoiceMoves => ({ charge: chargeIn, release: releaseIn, others: [] });

async function settleIn(tx: Queryable, req: SettleRequest, moves: ChoiceMoves): Promise<Resolution> {
  moves.others.length = 0;
  const resolution = (await chargeHeld(tx, req, ALONE)) ?? (await settleNotAlone(tx, req, moves));
  // The router's own write of it is best effort and may have met the database down; this one is
  // retried with the charge. Each entry merges once (by its call), so a repeat adds nothing; it is
  // written even when the hold had moved: the upstream cost us the run either way.
  for (const route of req.routes ?? []) await recordRoute(tx, req.generationId, route);
  return resolution;
}

/**
 * Which holds a move takes. A chat choice of a batch line moves only with its line's others
 * (line-choices.ts), so the first move of a settle or a release leaves it (`ALONE`): the common
 * case then costs one statement, and only a hold that did not move is asked why.
 */
type Holds = 'alone' | 'any';
const ALONE: Holds = 'alone';
const NOT_A_LINE_CHOICE = `AND NOT EXISTS (SELECT 1 FROM generations g
      WHERE g.id = holds.generation_id AND g.batch_id IS NOT NULL AND g.kind = 'chat' AND g.internal->'siblings' IS NOT NULL)`;

/** A hold that did not move alone: a line's choice, or one already resolved. */
async function settleNotAlone(tx: Queryable, req: SettleRequest, moves: ChoiceMoves): Promise<Resolution> {
  const choice = await lineChoiceOf(tx, req.generationId);
  return choice ? settleChoice(tx, choice, req, moves) : alreadyResolved(tx, req.generationId);
}

async function chargeIn(tx: Queryable, req: SettleRequest): Promise<Resolution> {
  return (await chargeHeld(tx, req, 'any')) ?? alreadyResolved(tx, req.generationId);
}

async function releaseIn(tx: Queryable, generationId: string, failure: GenerationFailure): Promise<Resolution> {
  return (await releaseHeld(tx, generationId, failure, 'any')) ?? alreadyResolved(tx, generationId);
}

/** Charges the hold if it is still held (and one `holds` takes); undefined when it did not move. */
async function chargeHeld(tx: Queryable, req: SettleRequest, holds: Holds): Promise<Resolution | undefined> {
  const moved = await tx.query<{ account_id: string; amount_mc: number; charged_mc: number }>(
    `UPDATE holds SET state = 'settled', resolved_at = now(),
            charged_mc = LEAST(COALESCE($2::bigint, amount_mc), amount_mc)
      WHERE generation_id = $1 AND state = 'held' ${holds === ALONE ? NOT_A_LINE_CHOICE : ''}
      RETURNING account_id, amount_mc, charged_mc`,
    [req.generationId, req.chargeMc ?? null],
  );
  const hold = moved.rows[0];
  if (!hold) return undefined;

  const rest = hold.amount_mc - hold.charged_mc;
  const after = await moveAccount(tx, hold.account_id, { heldDelta: -hold.amount_mc, balanceDelta: -hold.charged_mc });
  const entry = { accountId: hold.account_id, generationId: req.generationId, after };
  await appendEntry(tx, { ...entry, entry: 'charge', amountMc: hold.charged_mc, note: null });
  if (rest > 0) await appendEntry(tx, { ...entry, entry: 'release', amountMc: rest, note: 'unused part of the hold' });
  const g = await tx.query<{ kind: GenerationKind; batch_id: string | null }>(
    `WITH ${takeChange('$7')}
     UPDATE generations SET status = 'succeeded', charged_mc = $2::bigint, output_key = $3, output_text = $4,
            params = CASE WHEN $5::integer IS NULL THEN params ELSE params || jsonb_build_object('outputTokens', $5::integer) END,
            internal = CASE WHEN $6::jsonb IS NULL THEN internal ELSE internal || jsonb_build_object('outputToolCalls', $6::jsonb) END,
            token_usage = COALESCE($8::jsonb, token_usage),
            started_at = COALESCE(started_at, now()), finished_at = now(), updated_at = now(),
            change_seq = (SELECT n FROM change)
      WHERE id = $1 RETURNING kind, batch_id, ${notifyExpr('account_id', 'id', 'succeeded')}, ${BATCH_NOTICE}`,
    [
      req.generationId,
      hold.charged_mc,
      req.outputKey,
      req.outputText,
      req.outputTokens ?? null,
      req.toolCalls?.length ? JSON.stringify(req.toolCalls) : null,
      hold.account_id,
      req.usage ? JSON.stringify(tokenUsageColumn(req.usage)) : null,
    ],
  );
  const kind = kindOf(g.rows[0], req.generationId);
  await recordStatusEvent(tx, req.generationId, kind, 'succeeded');
  return { outcome: 'settled', kind, chargedMc: hold.charged_mc, releasedMc: rest, ...batchOf(g.rows[0]) };
}

/** Releases the hold if it is still held (and one `holds` takes); undefined when it did not move. */
async function releaseHeld(
  tx: Queryable,
  generationId: string,
  failure: GenerationFailure,
  holds: Holds,
): Promise<Resolution | undefined> {
  const moved = await tx.query<{ account_id: string; amount_mc: number; free_chat: boolean }>(
    `UPDATE holds SET state = 'released', resolved_at = now()
      WHERE generation_id = $1 AND state = 'held' ${holds === ALONE ? NOT_A_LINE_CHOICE : ''}
      RETURNING account_id, amount_mc, free_chat`,
    [generationId],
  );
  const hold = moved.rows[0];
  if (!hold) return undefined;

  // A failed free reply gives its allowance back: a failure costs nothing, not even a trial reply.
  const after = await moveAccount(tx, hold.account_id, {
    heldDelta: -hold.amount_mc,
    balanceDelta: 0,
    chatUsedDelta: hold.free_chat ? -1 : 0,
  });
  await appendEntry(tx, {
    accountId: hold.account_id,
    generationId,
    entry: 'release',
    amountMc: hold.amount_mc,
    after,
    note: failure.code,
  });
  const g = await tx.query<{ kind: GenerationKind; batch_id: string | null }>(
    `WITH ${takeChange('$3')}
     UPDATE generations SET status = 'failed', error = $2, finished_at = now(), updated_at = now(),
            change_seq = (SELECT n FROM change)
      WHERE id = $1 RETURNING kind, batch_id, ${notifyExpr('account_id', 'id', 'failed')}, ${BATCH_NOTICE}`,
    [generationId, JSON.stringify(failure), hold.account_id],
  );
  const kind = kindOf(g.rows[0], generationId);
  await recordStatusEvent(tx, generationId, kind, 'failed');
  return { outcome: 'released', kind, releasedMc: hold.amount_mc, code: failure.code, ...batchOf(g.rows[0]) };
}

/** A batch's line: its batch hears of it on the ledger's channel too (`<account>:<batch>:batch`). */
const BATCH_NOTICE = `CASE WHEN batch_id IS NOT NULL THEN pg_notify('${STATUS_CHANNEL}', account_id || ':' || batch_id || ':batch') END`;

/** The batch a resolved generation ran a line of, for the caller to wake its workflow. */
const batchOf = (row: { batch_id: string | null } | undefined): { batchId?: string } =>
  row?.batch_id ? { batchId: row.batch_id } : {};

function kindOf(row: { kind: GenerationKind } | undefined, generationId: string): GenerationKind {
  if (!row) throw new Error(`generation ${generationId} has a hold but no row`);
  return row.kind;
}

async function alreadyResolved(tx: Queryable, generationId: string): Promise<Resolution> {
  const r = await tx.query<{ state: 'held' | 'settled' | 'released'; code: string | null }>(
    `SELECT h.state, g.error->>'code' AS code FROM holds h LEFT JOIN generations g ON g.id = h.generation_id
      WHERE h.generation_id = $1`,
    [generationId],
  );
  const state = r.rows[0]?.state;
  const code = r.rows[0]?.code;
  if (state === 'settled') return { outcome: 'already', state };
  if (state === 'released') return { outcome: 'already', state, ...(code ? { code } : {}) };
  throw new Error(`no hold for generation ${generationId}`);
}

/** Counts what the transaction moved, after it committed; a repeat moved nothing and counts nothing. */
function counted(r: Resolution): Resolution {
  if (r.outcome === 'settled') {
    metrics.finished.inc({ kind: r.kind, status: 'succeeded', code: '' });
    metrics.creditsCharged.inc(mcToCredits(r.chargedMc));
    if (r.releasedMc > 0) metrics.creditsReleased.inc(mcToCredits(r.releasedMc));
  } else if (r.outcome === 'released') {
    metrics.finished.inc({ kind: r.kind, status: 'failed', code: r.code });
    if (r.releasedMc > 0) metrics.creditsReleased.inc(mcToCredits(r.releasedMc));
  }
  return r;
}
