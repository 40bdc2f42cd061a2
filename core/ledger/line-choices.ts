import type { Queryable } from '../db/pool';
import { choiceOutcome } from '../generation/choices';
import type { GenerationFailure } from '../vocabulary';
import type { Resolution, SettleRequest } from './resolution';

/**
 * A batch line of several chat choices (OpenAI's `n`): each choice is a generation with a workflow
 * of its own, and the line is one answer, charged all or none by the rule of a reply's choices
 * (core/generation/choices.ts). A choice that succeeds while others of its line still run keeps
 * its hold and leaves its report here (`holds.choice_report`); the last to succeed charges every
 * choice of the line from their reports, in its own transaction. A choice that fails is released,
 * and so is every choice that has reported, with `choice_failed`; one still running is released
 * the same way when it reports. The line's row is locked first, so its choices decide in turn.
 */

/** The batch line a generation is a chat choice of, when it is one of several. */
export interface LineChoice {
  batchId: string;
  line: number;
}

/** How a choice's hold moves (core/ledger/resolve.ts), and what moved besides it, for the metrics. */
export interface ChoiceMoves {
  charge(tx: Queryable, req: SettleRequest): Promise<Resolution>;
  release(tx: Queryable, generationId: string, failure: GenerationFailure): Promise<Resolution>;
  /** The other choices this transaction moved. */
  others: Resolution[];
}

export async function lineChoiceOf(tx: Queryable, generationId: string): Promise<LineChoice | undefined> {
  const r = await tx.query<{ batch_id: string; batch_line: number }>(
    `SELECT batch_id, batch_line FROM generations
      WHERE id = $1 AND batch_id IS NOT NULL AND kind = 'chat' AND internal->'siblings' IS NOT NULL`,
    [generationId],
  );
  const row = r.rows[0];
  return row ? { batchId: row.batch_id, line: row.batch_line } : undefined;
}

interface Sibling {
  id: string;
  state: 'held' | 'settled' | 'released';
  report: SettleRequest | null;
  error: GenerationFailure | null;
}

/** Locks the line and reads the other choices of it, in the order their holds resolved. */
async function siblingsOf(tx: Queryable, choice: LineChoice, generationId: string): Promise<Sibling[]> {
  await tx.query('SELECT 1 FROM batch_lines WHERE batch_id = $1 AND line = $2 FOR UPDATE', [
    choice.batchId,
    choice.line,
  ]);
  const r = await tx.query<Sibling>(
    `SELECT g.id, h.state, h.choice_report AS report, g.error
       FROM generations g JOIN holds h ON h.generation_id = g.id
      WHERE g.batch_id = $1 AND g.batch_line = $2 AND g.id <> $3
      ORDER BY h.resolved_at NULLS LAST, g.id`,
    [choice.batchId, choice.line, generationId],
  );
  return r.rows;
}

/** The failure that stands for the line: the first released choice's own (the others say `choice_failed`). */
const firstFailureOf = (siblings: readonly Sibling[]): GenerationFailure | undefined =>
  siblings.find((s) => s.state === 'released' && s.error?.code !== 'choice_failed')?.error ??
  siblings.find((s) => s.state === 'released')?.error ??
  undefined;

/**
 * A choice that succeeded: charged with every other choice of its line once all have succeeded,
 * released when one has failed, else its report kept and `waiting` answered (its workflow asks again).
 */
export async function settleChoice(
  tx: Queryable,
  choice: LineChoice,
  req: SettleRequest,
  moves: ChoiceMoves,
): Promise<Resolution> {
  const siblings = await siblingsOf(tx, choice, req.generationId);
  const end = choiceOutcome({ ok: true }, firstFailureOf(siblings));
  if (!end.ok) return moves.release(tx, req.generationId, end.error);
  const reported = siblings.filter((s) => s.state === 'held' && s.report !== null);
  if (reported.length < siblings.length) {
    const { routes: _recorded, ...report } = req;
    const kept = await tx.query(
      `UPDATE holds SET choice_report = $2::jsonb WHERE generation_id = $1 AND state = 'held'`,
      [req.generationId, JSON.stringify(report)],
    );
    if ((kept.rowCount ?? 0) === 0) return moves.charge(tx, req);
    return { outcome: 'waiting', kind: 'chat' };
  }
  for (const s of reported) moves.others.push(await moves.charge(tx, s.report!));
  return moves.charge(tx, req);
}

/**
 * A choice that failed: released with its own failure when it is the line's first (else
 * `choice_failed`), and every choice of the line that has reported released with `choice_failed`.
 * The first failure names the choices still running, for the caller to stop (a reply's are too).
 */
export async function releaseChoice(
  tx: Queryable,
  choice: LineChoice,
  generationId: string,
  failure: GenerationFailure,
  moves: ChoiceMoves,
): Promise<Resolution> {
  const siblings = await siblingsOf(tx, choice, generationId);
  const first = firstFailureOf(siblings);
  const own = await moves.release(tx, generationId, choiceOutcome({ ok: false, error: failure }, first).error);
  if (own.outcome !== 'released') return own;
  const released = choiceOutcome({ ok: true }, first ?? failure);
  if (released.ok) return own;
  for (const s of siblings.filter((x) => x.state === 'held' && x.report !== null))
    moves.others.push(await moves.release(tx, s.id, released.error));
  const running = siblings.filter((x) => x.state === 'held' && x.report === null).map((x) => x.id);
  return first === undefined && running.length > 0 ? { ...own, stopChoices: running } : own;
}
