import type { Queryable } from './pool';
import { tokenUsageSum } from './token-usage';

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
  /** Chats' input, with its cache reads and writes, and the reasoning within their output (core/db/token-usage.ts). */
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
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
    input_tokens: number;
    cached_input_tokens: number;
    cache_write_tokens: number;
    reasoning_tokens: number;
  }>(
    `SELECT ${GROUP_SQL[groupBy]} AS grp, COALESCE(SUM(charged_mc), 0)::bigint AS charged_mc, count(*)::int AS generations,
            count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, count(*) FILTER (WHERE status = 'failed')::int AS failed,
            COALESCE(SUM((params->>'outputTokens')::bigint), 0)::bigint AS output_tokens,
            ${tokenUsageSum('inputTokens')} AS input_tokens, ${tokenUsageSum('cachedInputTokens')} AS cached_input_tokens,
            ${tokenUsageSum('cacheWriteTokens')} AS cache_write_tokens, ${tokenUsageSum('reasoningTokens')} AS reasoning_tokens
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
    inputTokens: row.input_tokens,
    cachedInputTokens: row.cached_input_tokens,
    cacheWriteTokens: row.cache_write_tokens,
    reasoningTokens: row.reasoning_tokens,
  }));
}
