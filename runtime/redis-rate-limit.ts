// The rate limit shared by API instances through Redis. Its own module so that ioredis is loaded
// only by a process configured with REDIS_URL.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { PLAN_RATE_LIMITS } from '../core/plans';
import { createRateLimiter, decision, WINDOW_MS } from '../api/shared/rate-limit';
import type { RateDecision, RateLimiter } from '../api/shared/rate-limit';

/**
 * The same sliding-window log as a sorted set per key, checked and extended in one script so
 * that concurrent instances cannot both take the last slot. The script reads Redis's own clock:
 * instances whose clocks disagree still share one window.
 * Returns { allowed (0/1), requests in the window, ms until its oldest request leaves }.
 */
const SLIDING_WINDOW_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
local allowed = 0
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  count = count + 1
  allowed = 1
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
return { allowed, count, oldest + window - now }
`;

type SlidingWindowReply = [number, number, number];
type ScriptedRedis = Redis & {
  slidingWindow(key: string, windowMs: number, limit: number, member: string): Promise<SlidingWindowReply>;
};

export interface RedisRateLimiterOptions {
  url: string;
  /** How long one check may take before the request is decided locally instead. */
  timeoutMs?: number;
  windowMs?: number;
  keyPrefix?: string;
  log?: { warn(message: string): void; info(message: string): void };
}

/**
 * The rate limit shared by every API instance, in Redis. When Redis cannot answer (down,
 * unreachable, slower than `timeoutMs`) a request is never refused or delayed for that: it is
 * decided by this instance's own in-process window instead (so each instance still holds the
 * plan's limit on its own), and the outage is logged once, as is the recovery. Rate limiting
 * protects capacity, not money: every generation is still held and charged in the ledger.
 */
export function createRedisRateLimiter(opts: RedisRateLimiterOptions): RateLimiter {
  const windowMs = opts.windowMs ?? WINDOW_MS;
  const timeoutMs = opts.timeoutMs ?? 500;
  const prefix = opts.keyPrefix ?? 'gensvc:ratelimit:';
  const log = opts.log ?? { warn: (m: string) => console.warn(m), info: (m: string) => console.info(m) };
  const local = createRateLimiter(Date.now, windowMs);

  const redis = new Redis(opts.url, {
    // Workers open the same services but never check a rate: connect on first use only.
    lazyConnect: true,
    // A command while disconnected fails at once rather than waiting in a queue and counting
    // the request later, when it no longer matters.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 2_000,
    // Keep trying in the background, at most every 2 s, for as long as the process lives.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  }) as ScriptedRedis;
  redis.defineCommand('slidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW_SCRIPT });

  let degraded = false;
  const unavailable = (err: unknown) => {
    if (degraded) return;
    degraded = true;
    log.warn(
      `rate limit: Redis is unavailable (${err instanceof Error ? err.message : String(err)}); each API instance enforces the plan limits on its own until it is back`,
    );
  };
  // Without a listener ioredis prints every failed reconnection attempt.
  redis.on('error', unavailable);

  let firstConnect: Promise<void> | undefined;
  const connected = (): Promise<void> => {
    // The first request waits for the connection (bounded); later ones never wait for a reconnect.
    firstConnect ??= Promise.race([
      redis.connect(),
      new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
    ]).catch(() => undefined);
    return firstConnect;
  };

  const check = async (bucket: string, limit: number): Promise<RateDecision> => {
    try {
      await connected();
      const [allowed, count, resetMs] = await redis.slidingWindow(`${prefix}${bucket}`, windowMs, limit, randomUUID());
      if (degraded) {
        degraded = false;
        log.info('rate limit: Redis is back; API instances share the plan limits again');
      }
      return decision(limit, allowed === 1, count, resetMs);
    } catch (err) {
      unavailable(err);
      return local.check(bucket, limit);
    }
  };

  return {
    decide: (keyId, plan) => check(keyId, PLAN_RATE_LIMITS[plan]),
    check,
    close() {
      // quit() would wait for a connection that may never come.
      redis.disconnect();
      return Promise.resolve();
    },
  };
}
