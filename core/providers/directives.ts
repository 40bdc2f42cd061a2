/**
 * Test directives a prompt may carry, like a payment provider's test card numbers (DESIGN §7):
 * `sim:fail`, `sim:delay=<ms>`, `sim:tokens=<n>`, and for streamed chat `sim:pace=<ms>` between tokens.
 */
export interface SimDirectives {
  fail: boolean;
  delayMs?: number;
  tokens?: number;
  /** Streamed chat: the pause between two tokens (`sim:pace=<ms>`). */
  paceMs?: number;
}

const MAX_DELAY_MS = 60 * 60 * 1000;
const MAX_TOKENS = 100_000;

export function parseDirectives(prompt: string): SimDirectives {
  const directives: SimDirectives = { fail: /(^|\s)sim:fail(\s|$)/.test(prompt) };
  const delay = /(?:^|\s)sim:delay=(\d+)(?:\s|$)/.exec(prompt);
  if (delay) directives.delayMs = Math.min(Number(delay[1]), MAX_DELAY_MS);
  const tokens = /(?:^|\s)sim:tokens=(\d+)(?:\s|$)/.exec(prompt);
  if (tokens) directives.tokens = Math.min(Number(tokens[1]), MAX_TOKENS);
  const pace = /(?:^|\s)sim:pace=(\d+)(?:\s|$)/.exec(prompt);
  if (pace) directives.paceMs = Math.min(Number(pace[1]), MAX_DELAY_MS);
  return directives;
}
