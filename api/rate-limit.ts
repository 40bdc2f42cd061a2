import type { Plan } from '../core/db/accounts';
import { RateLimitError } from '../core/errors';

/** Requests per sliding 60-second window, per API key (spec, Limits). */
export const PLAN_LIMITS: Record<Plan, number> = { free: 20, ronin: 60, shinobi: 200, samurai: 600 };
const WINDOW_MS = 60_000;

export interface RateDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
  /** Set when the window is full: the error to answer with (the headers still apply). */
  refused?: RateLimitError;
}

/**
 * An in-process sliding-window log: exact, and small because a key keeps at most `limit`
 * timestamps. One API instance only; several instances need a shared store (DESIGN §6: Redis).
 */
export function createRateLimiter(now: () => number = Date.now) {
  const windows = new Map<string, number[]>();
  return {
    /** Counts the request if the window has room; otherwise says when to retry. */
    decide(keyId: string, plan: Plan): RateDecision {
      const limit = PLAN_LIMITS[plan];
      const t = now();
      const stamps = (windows.get(keyId) ?? []).filter((s) => s > t - WINDOW_MS);
      if (stamps.length >= limit) {
        windows.set(keyId, stamps);
        const retryAfter = Math.max(1, Math.ceil((stamps[0]! + WINDOW_MS - t) / 1000));
        return { limit, remaining: 0, resetSeconds: retryAfter, refused: new RateLimitError(limit, retryAfter) };
      }
      stamps.push(t);
      windows.set(keyId, stamps);
      return { limit, remaining: limit - stamps.length, resetSeconds: Math.ceil((stamps[0]! + WINDOW_MS - t) / 1000) };
    },
    /** Counts the request, or throws RateLimitError when the window is full. */
    take(keyId: string, plan: Plan): RateDecision {
      const decision = this.decide(keyId, plan);
      if (decision.refused) throw decision.refused;
      return decision;
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
