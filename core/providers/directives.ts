/**
 * Test directives a prompt may carry, like a payment provider's test card numbers (DESIGN §7):
 * `sim:fail`, `sim:delay=<ms>`, `sim:until=<epoch ms>` (the run lasts until then: the bench holds
 * many jobs in flight at once and lets them all go together), `sim:tokens=<n>`, and for streamed
 * chat `sim:pace=<ms>` between tokens, and for chat with functions `sim:tool=<name>` (call that one).
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
}

const MAX_DELAY_MS = 60 * 60 * 1000;
const MAX_TOKENS = 100_000;

export function parseDirectives(prompt: string): SimDirectives {
  const directives: SimDirectives = { fail: /(^|\s)sim:fail(\s|$)/.test(prompt) };
  const delay = /(?:^|\s)sim:delay=(\d+)(?:\s|$)/.exec(prompt);
  if (delay) directives.delayMs = Math.min(Number(delay[1]), MAX_DELAY_MS);
  const until = /(?:^|\s)sim:until=(\d+)(?:\s|$)/.exec(prompt);
  if (until) directives.untilEpochMs = Number(until[1]);
  const tokens = /(?:^|\s)sim:tokens=(\d+)(?:\s|$)/.exec(prompt);
  if (tokens) directives.tokens = Math.min(Number(tokens[1]), MAX_TOKENS);
  const pace = /(?:^|\s)sim:pace=(\d+)(?:\s|$)/.exec(prompt);
  if (pace) directives.paceMs = Math.min(Number(pace[1]), MAX_DELAY_MS);
  const tool = /(?:^|\s)sim:tool=([a-zA-Z0-9_-]{1,64})(?:\s|$)/.exec(prompt);
  if (tool) directives.tool = tool[1];
  return directives;
}
