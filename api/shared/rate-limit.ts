import { PLAN_RATE_LIMITS } from '../../core/plans';
import type { Plan } from '../../core/plans';
import { RateLimitError } from '../../core/errors';

export const WINDOW_MS = 60_000;

export interface RateDecision {
  limit: number;
  remaining: number;
  resetSeconds: number;
  /** Set when the window is full: the error to answer with (the headers still apply). */
  refused?: RateLimitError;
}

export interface RateLimiter {
  /** Counts the request if the window has room; otherwise says when to retry. */
  decide(keyId: string, plan: Plan): Promise<RateDecision>;
  /** The same for any bucket with its own limit per window (a session's user, login attempts). */
  check(bucket: string, limit: number): Promise<RateDecision>;
  close(): Promise<void>;
}

/** `count` requests in the window after this one; the oldest of them leaves it in `resetMs`. */
export function decision(limit: number, allowed: boolean, count: number, resetMs: number): RateDecision {
  const resetSeconds = Math.max(allowed ? 0 : 1, Math.ceil(resetMs / 1000));
  if (!allowed) return { limit, remaining: 0, resetSeconds, refused: new RateLimitError(limit, resetSeconds) };
  return { limit, remaining: limit - count, resetSeconds };
}

/**
 * An in-process sliding-window log: exact, and small because a key keeps at most `limit`
 * timestamps. It speaks for one API instance only; `createRedisRateLimiter`
 * (runtime/redis-rate-limit.ts, loaded only when REDIS_URL is set) is the shared one.
 */
export function createRateLimiter(now: () => number = Date.now, windowMs = WINDOW_MS): RateLimiter {
  const windows = new Map<string, number[]>();
  const check = (bucket: string, limit: number): Promise<RateDecision> => {
    const t = now();
    const stamps = (windows.get(bucket) ?? []).filter((s) => s > t - windowMs);
    const allowed = stamps.length < limit;
    if (allowed) stamps.push(t);
    windows.set(bucket, stamps);
    return Promise.resolve(decision(limit, allowed, stamps.length, stamps[0]! + windowMs - t));
  };
  return {
    decide: (keyId, plan) => check(keyId, PLAN_RATE_LIMITS[plan]),
    check,
    close: () => Promise.resolve(),
  };
}
