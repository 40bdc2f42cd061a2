/**
 * Test directives a prompt may carry, like a payment provider's test card numbers (DESIGN §7):
 * `sim:fail`, `sim:delay=<ms>`, `sim:until=<epoch ms>` (the run lasts until then: the bench holds
 * many jobs in flight at once and lets them all go together), `sim:tokens=<n>`, and for streamed
 * chat `sim:pace=<ms>` between tokens, and for chat with functions `sim:tool=<name>` (call that one).
 * A chat's usage reports, as a hosted model's would, `sim:cached=<n>` input tokens read from the
 * prompt cache, `sim:cache_write=<n>` written to it, and `sim:reasoning=<n>` reasoning tokens
 * (output tokens the reply does not show, within its cap).
 */
export interface SimDirectives {
  fail: boolean;
  delayMs?: number;
  untilEpochMs?: number;
  tokens?: number;
  /** Streamed chat: the pause between two tokens (`sim:pace=<ms>`). */
  paceMs?: number;
  /** Chat with functions: call this one (`sim:tool=<name>`) unless the last turn is a function's result. */
  tool?: string;
  cachedTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
}

const MAX_DELAY_MS = 60 * 60 * 1000;
const MAX_TOKENS = 100_000;

export function parseDirectives(prompt: string): SimDirectives {
  // In a conversation the newest turn's directive wins: a later `sim:tokens=5` overrides an earlier one.
  const last = (name: string, value = '\\d+'): string | undefined =>
    [...prompt.matchAll(new RegExp(`(?:^|\\s)sim:${name}=(${value})(?=\\s|$)`, 'g'))].at(-1)?.[1];
  const directives: SimDirectives = { fail: /(^|\s)sim:fail(\s|$)/.test(prompt) };
  const delay = last('delay');
  if (delay) directives.delayMs = Math.min(Number(delay), MAX_DELAY_MS);
  const until = last('until');
  if (until) directives.untilEpochMs = Number(until);
  const tokens = last('tokens');
  if (tokens) directives.tokens = Math.min(Number(tokens), MAX_TOKENS);
  const pace = last('pace');
  if (pace) directives.paceMs = Math.min(Number(pace), MAX_DELAY_MS);
  const tool = last('tool', '[a-zA-Z0-9_-]{1,64}');
  if (tool) directives.tool = tool;
  const cached = last('cached');
  if (cached) directives.cachedTokens = Math.min(Number(cached), MAX_TOKENS);
  const cacheWrite = last('cache_write');
  if (cacheWrite) directives.cacheWriteTokens = Math.min(Number(cacheWrite), MAX_TOKENS);
  const reasoning = last('reasoning');
  if (reasoning) directives.reasoningTokens = Math.min(Number(reasoning), MAX_TOKENS);
  return directives;
}
