import type pg from 'pg';
import { usageOf } from '../../core/db/usage';
import type { UsageGroup, UsageRow } from '../../core/db/usage';
import { InvalidRequestError } from '../../core/errors';
import { mcToCredits } from '../../core/money';
import { csvOf } from './csv';
import type { Principal } from '../../core/accounts/principal';

const DAY_MS = 86_400_000;

/** The token counts a report sums: the output charged for, and chats' input and reasoning in detail. */
const TOKEN_FIGURES = [
  'outputTokens',
  'inputTokens',
  'cachedInputTokens',
  'cacheWriteTokens',
  'reasoningTokens',
] as const;
type TokenFigure = (typeof TOKEN_FIGURES)[number];

const tokenFiguresOf = (r: Pick<UsageRow, TokenFigure> | undefined): Record<TokenFigure, number> =>
  Object.fromEntries(TOKEN_FIGURES.map((k) => [k, r?.[k] ?? 0])) as Record<TokenFigure, number>;
/** The longest range one call reads. */
export const MAX_USAGE_DAYS = 366;

/**
 * An account's usage in [from, to) per day, model, key, kind or customer (or of one customer): credits charged, generations,
 * how they ended, output tokens. Default range: the last 30 days up to now. A day-grouped answer
 * lists every day of the range, those without a generation as zeros, so a chart has no gaps.
 */
export async function usageReport(
  pool: pg.Pool,
  principal: Principal,
  q: { from?: string | undefined; to?: string | undefined; group_by: UsageGroup; customer?: string | undefined },
) {
  const to = q.to ? new Date(q.to) : new Date();
  const from = q.from
    ? new Date(q.from)
    : new Date(Date.UTC(to.getUTCFullYear(), to.getUTCMonth(), to.getUTCDate()) - 29 * DAY_MS);
  if (!(from < to)) throw new InvalidRequestError('from must be before to', 'from');
  if (to.getTime() - from.getTime() > MAX_USAGE_DAYS * DAY_MS)
    throw new InvalidRequestError(`at most ${MAX_USAGE_DAYS} days at a time`, 'from');
  const rows = await usageOf(pool, principal.accountId, { from, to }, q.group_by, q.customer);
  let data = rows.map((r) => ({
    group: r.group,
    creditsCharged: mcToCredits(r.chargedMc),
    generations: r.generations,
    succeeded: r.succeeded,
    failed: r.failed,
    ...tokenFiguresOf(r),
  }));
  if (q.group_by === 'day') {
    const byDay = new Map(data.map((d) => [d.group, d]));
    data = [];
    for (
      let t = Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate());
      t < to.getTime();
      t += DAY_MS
    ) {
      const day = new Date(t).toISOString().slice(0, 10);
      data.push(
        byDay.get(day) ?? {
          group: day,
          creditsCharged: 0,
          generations: 0,
          succeeded: 0,
          failed: 0,
          ...tokenFiguresOf(undefined),
        },
      );
    }
  }
  const sum = (k: 'generations' | 'succeeded' | 'failed' | TokenFigure) => data.reduce((s, d) => s + d[k], 0);
  const chargedMc = rows.reduce((s, r) => s + r.chargedMc, 0);
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    group_by: q.group_by,
    data,
    total: {
      creditsCharged: mcToCredits(chargedMc),
      generations: sum('generations'),
      succeeded: sum('succeeded'),
      failed: sum('failed'),
      ...(Object.fromEntries(TOKEN_FIGURES.map((k) => [k, sum(k)])) as Record<TokenFigure, number>),
    },
  };
}

export type UsageReport = Awaited<ReturnType<typeof usageReport>>;

const USAGE_CSV_COLUMNS = [
  'from',
  'to',
  'group',
  'creditsCharged',
  'generations',
  'succeeded',
  'failed',
  ...TOKEN_FIGURES,
] as const;

/** A usage report as CSV, one line per group with the period on each (what a platform invoices its customers from). */
export function usageCsv(report: UsageReport): string {
  return csvOf(
    USAGE_CSV_COLUMNS,
    report.data.map((d) => ({ from: report.from, to: report.to, ...d })),
  );
}
