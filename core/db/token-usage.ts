import type { TokenUsage } from '../vocabulary';

/**
 * `generations.token_usage`: a chat's tokens in detail, as a JSON object of TokenUsage's five
 * counts and nothing else, so that the usage report can sum each by name.
 */

const COUNTS = ['inputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'outputTokens', 'reasoningTokens'] as const;

export function tokenUsageColumn(u: TokenUsage): TokenUsage {
  return Object.fromEntries(COUNTS.map((k) => [k, u[k]])) as unknown as TokenUsage;
}

/** The column as read: null unless every count is there. */
export function tokenUsageOfColumn(value: unknown): TokenUsage | null {
  if (value === null || typeof value !== 'object') return null;
  const row = value as Record<string, unknown>;
  return COUNTS.every((k) => Number.isSafeInteger(row[k])) ? tokenUsageColumn(row as unknown as TokenUsage) : null;
}

/** SUM of one count over the rows read, as SQL (`k` is one of the five names, never a request's text). */
export function tokenUsageSum(k: keyof TokenUsage): string {
  return `COALESCE(SUM((token_usage->>'${k}')::bigint), 0)::bigint`;
}
