import type { Queryable } from './pool';

export const USAGE_GROUPS = ['day', 'model', 'key', 'kind', 'customer'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageRow {
  /** The day (YYYY-MM-DD, UTC), model id, key id (`none` for the dashboard's own), kind or customer (null: none named). */
  group: string | null;
  chargedMc: number;
  generations: number;
  succeeded: number;
  failed: number;
  outputTokens: number;
}

// Whitelisted SQL per grouping: never a string from the request.
const GROUP_SQL: Record<UsageGroup, string> = {
  day: `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
  model: 'model',
  key: `COALESCE(api_key_id, 'none')`,
  kind: 'kind',
  customer: 'customer_id',
};

/** What an account's generations created in [from, to) (of one customer, if given) were charged and how they ended, per group. */
export async function usageOf(
  q: Queryable,
  accountId: string,
  range: { from: Date; to: Date },
  groupBy: UsageGroup,
  customerId?: string,
): Promise<UsageRow[]> {
  const r = await q.query<{
    grp: string | null;
    charged_mc: number;
    generations: number;
    succeeded: number;
    failed: number;
    output_tokens: number;
  }>(
    `SELECT ${GROUP_SQL[groupBy]} AS grp, COALESCE(SUM(charged_mc), 0)::bigint AS charged_mc, count(*)::int AS generations,
            count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, count(*) FILTER (WHERE status = 'failed')::int AS failed,
            COALESCE(SUM((params->>'outputTokens')::bigint), 0)::bigint AS output_tokens
       FROM generations WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 AND ($4::text IS NULL OR customer_id = $4)
      GROUP BY 1 ORDER BY ${groupBy === 'day' ? '1' : '2 DESC, 1 NULLS LAST'}`,
    [accountId, range.from, range.to, customerId ?? null],
  );
  return r.rows.map((row) => ({
    group: row.grp,
    chargedMc: row.charged_mc,
    generations: row.generations,
    succeeded: row.succeeded,
    failed: row.failed,
    outputTokens: row.output_tokens,
  }));
}
