// The Redis rate limiter against a real redis-server: one sliding window shared by every
// limiter (as by every API instance), taken atomically, and a Redis outage that neither refuses
// nor delays requests.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createRedisRateLimiter } from '../../../runtime/redis-rate-limit';
import type { RateLimiter } from '../../../api/shared/rate-limit';
import { freePort } from '../../../runtime/process';
import { eventually } from '../../support/harness';
import { startRedis } from '../../support/redis-server';
import type { RedisServer } from '../../support/redis-server';

let redis: RedisServer;
const limiters: RateLimiter[] = [];

function limiter(opts: { url?: string; windowMs?: number; messages?: string[] } = {}): RateLimiter {
  const messages = opts.messages ?? [];
  const l = createRedisRateLimiter({
    url: opts.url ?? redis.url,
    ...(opts.windowMs === undefined ? {} : { windowMs: opts.windowMs }),
    log: { warn: (m) => messages.push(`warn: ${m}`), info: (m) => messages.push(`info: ${m}`) },
  });
  limiters.push(l);
  return l;
}

const keyId = () => `key_${randomUUID()}`;

beforeAll(async () => {
  redis = await startRedis(join(inject('testDataDir'), `redis-${randomUUID()}`));
});

afterAll(async () => {
  await Promise.all(limiters.map((l) => l.close()));
  await redis?.stop();
});

describe('rate limits in Redis', () => {
  it('holds the plan limit across instances: 20 requests of a free key over two, the 21st refused on either', async () => {
    const [a, b] = [limiter(), limiter()];
    const key = keyId();
    for (let i = 0; i < 20; i++) {
      const d = await (i % 2 === 0 ? a : b).decide(key, 'free');
      expect(d, `request ${i + 1}`).toMatchObject({ limit: 20, remaining: 19 - i });
      expect(d.refused).toBeUndefined();
      expect(d.resetSeconds).toBeGreaterThanOrEqual(59);
      expect(d.resetSeconds).toBeLessThanOrEqual(60);
    }
    for (const l of [a, b]) {
      const refused = await l.decide(key, 'free');
      expect(refused).toMatchObject({ limit: 20, remaining: 0 });
      expect(refused.refused?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(refused.refused?.retryAfterSeconds).toBeLessThanOrEqual(60);
      expect(refused.resetSeconds).toBe(refused.refused?.retryAfterSeconds);
    }
    // Another key and another plan have their own windows.
    expect(await a.decide(keyId(), 'samurai')).toMatchObject({ limit: 600, remaining: 599 });
  });

  it('never lets concurrent requests on two instances take more than the limit', async () => {
    const [a, b] = [limiter(), limiter()];
    const key = keyId();
    const decisions = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? a : b).decide(key, 'free')),
    );
    expect(decisions.filter((d) => !d.refused)).toHaveLength(20);
    expect(
      decisions
        .filter((d) => !d.refused)
        .map((d) => d.remaining)
        .sort((x, y) => x - y),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('slides: a request is counted until the window has passed since it was made', async () => {
    const windowMs = 1_500;
    const l = limiter({ windowMs });
    const key = keyId();
    for (let i = 0; i < 10; i++) expect((await l.decide(key, 'free')).refused).toBeUndefined();
    await sleep(windowMs / 2);
    for (let i = 0; i < 10; i++) expect((await l.decide(key, 'free')).refused).toBeUndefined();
    expect((await l.decide(key, 'free')).refused).toBeDefined();
    // The first ten have left the window; the second ten are still in it.
    await sleep(windowMs / 2 + 200);
    const after = await l.decide(key, 'free');
    expect(after.refused).toBeUndefined();
    expect(after.remaining).toBe(9);
  });

  it('keeps answering without Redis (each instance alone), says so once, and shares again once Redis is back', async () => {
    const messages: string[] = [];
    const l = limiter({ messages });
    const key = keyId();
    expect(await l.decide(key, 'free')).toMatchObject({ remaining: 19 });

    await redis.stop();
    // Decided while Redis is still down: a limiter that waited for it would wait until the restart
    // below, which never comes (the test's timeout fails it).
    const during = await Promise.all(Array.from({ length: 5 }, () => l.decide(key, 'free')));
    // The local window knows nothing of the request counted in Redis: it starts afresh.
    expect(during.map((d) => d.remaining).sort((x, y) => y - x)).toEqual([19, 18, 17, 16, 15]);
    expect(messages.filter((m) => m.startsWith('warn:'))).toHaveLength(1);
    expect(messages[0]).toMatch(/Redis is unavailable.*on its own/);

    await redis.restart();
    // It reconnects in the background; meanwhile requests are still decided locally.
    await eventually(
      async () => {
        await l.decide(key, 'free');
        return messages.some((m) => m.startsWith('info:')) ? true : undefined;
      },
      10_000,
      100,
    );
    expect(messages.filter((m) => m.startsWith('info:'))).toEqual([expect.stringMatching(/Redis is back/)]);
    expect(messages.filter((m) => m.startsWith('warn:'))).toHaveLength(1);
    // Shared again: another instance sees this one's requests.
    const mine = await l.decide(key, 'free');
    expect((await limiter().decide(key, 'free')).remaining).toBe(mine.remaining - 1);
  });

  it('answers at once when Redis cannot be reached from the start, and uses it once it is there', async () => {
    const messages: string[] = [];
    const port = await freePort();
    const l = limiter({ url: `redis://127.0.0.1:${port}`, messages });
    const key = keyId();
    // Decided before any Redis listens on the port (it starts below): nothing waited for one.
    expect(await l.decide(key, 'ronin')).toMatchObject({ limit: 60, remaining: 59 });
    expect(messages).toEqual([expect.stringMatching(/^warn: rate limit: Redis is unavailable/)]);

    const late = await startRedis(join(inject('testDataDir'), `redis-${randomUUID()}`), port);
    try {
      await eventually(
        async () => {
          await l.decide(key, 'ronin');
          return messages.some((m) => m.startsWith('info:')) ? true : undefined;
        },
        10_000,
        100,
      );
      const mine = await l.decide(key, 'ronin');
      expect((await limiter({ url: late.url }).decide(key, 'ronin')).remaining).toBe(mine.remaining - 1);
    } finally {
      await late.stop();
    }
  });
});
