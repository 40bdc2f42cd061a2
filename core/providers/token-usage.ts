import type { TokenUsage } from '../vocabulary';
import type { ProviderUsage } from './types';

/**
 * A chat's usage as recorded and answered: the provider's figures where it gave them, else what
 * the service counted. `charged` is the output the reply is charged for (core/catalogue/pricing.ts
 * `tokenCharge`), which the record's output is, whatever the provider claimed past the hold.
 */
export function tokenUsageOf(
  reported: Omit<ProviderUsage, 'outputTokens'> | undefined,
  counted: { prompt: string; charged: number },
): TokenUsage {
  const cachedInputTokens = reported?.cachedInputTokens ?? 0;
  const cacheWriteTokens = reported?.cacheWriteTokens ?? 0;
  const inputTokens = Math.max(
    reported?.inputTokens ?? estimatedInputTokens(counted.prompt),
    cachedInputTokens + cacheWriteTokens,
  );
  return {
    inputTokens,
    cachedInputTokens,
    cacheWriteTokens,
    outputTokens: counted.charged,
    reasoningTokens: Math.min(reported?.reasoningTokens ?? 0, counted.charged),
  };
}

/** The input's size when no provider counted it: about four characters a token. */
export function estimatedInputTokens(prompt: string): number {
  return Math.ceil(prompt.length / 4);
}

/** Anthropic's input figure: the input read from or written to the cache is counted apart. */
export function uncachedInputTokens(u: TokenUsage): number {
  return Math.max(0, u.inputTokens - u.cachedInputTokens - u.cacheWriteTokens);
}

/**
 * The usage of the replies of one request (OpenAI's `n` choices) as OpenAI counts it: the prompt
 * once, the output of them all. Every choice read the same prompt, so the input figures are the
 * first choice's (another may have found more of it in the provider's cache: that is the cache's
 * doing, not more input). Billing is per output token, so the charge is the sum either way.
 */
export function choicesTokenUsage(usages: readonly TokenUsage[]): TokenUsage {
  const sum = (k: 'outputTokens' | 'reasoningTokens') => usages.reduce((total, u) => total + u[k], 0);
  const first = usages[0];
  return {
    inputTokens: first?.inputTokens ?? 0,
    cachedInputTokens: first?.cachedInputTokens ?? 0,
    cacheWriteTokens: first?.cacheWriteTokens ?? 0,
    outputTokens: sum('outputTokens'),
    reasoningTokens: sum('reasoningTokens'),
  };
}
