import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, isWellFormedApiKey, normaliseScope } from '../../../core/accounts/api-keys';
import { loadConfig, ConfigError } from '../../../core/config';
import { RateLimitError } from '../../../core/errors';
import { newId, GENERATION_ID_PATTERN } from '../../../core/ids';
import { creditsToMc, mcToCredits } from '../../../core/money';
import { parseDirectives } from '../../../core/providers/directives';
import { isPromptRefused } from '../../../core/generation/safety';
import { createRateLimiter } from '../../../api/shared/rate-limit';

describe('API keys', () => {
  it('are prefixed, checksummed, and hashed with SHA-256', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^gsk_[0-9A-Za-z]{36}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    expect(isWellFormedApiKey(flipped)).toBe(false);
    expect(hashApiKey(key)).toHaveLength(32);
    expect(generateApiKey()).not.toBe(key);
  });
  it('accept both scope spellings', () => {
    expect(normaliseScope('generate:video')).toBe('video');
    expect(normaliseScope('chat')).toBe('chat');
    expect(normaliseScope('admin')).toBeUndefined();
  });
});

describe('money and ids', () => {
  it('keeps decimal credit rates exact as millicredits', () => {
    expect(creditsToMc(10.1) * 5).toBe(50_500);
    expect(mcToCredits(creditsToMc(0.1) + creditsToMc(0.2))).toBe(0.3);
  });
  it('makes time-ordered generation ids', () => {
    const a = newId('gen', 1_700_000_000_000);
    const b = newId('gen', 1_700_000_000_001);
    expect(a).toMatch(GENERATION_ID_PATTERN);
    expect(a < b).toBe(true);
  });
});

describe('rate limit', () => {
  it('allows the plan limit in a sliding minute, then says when to retry', async () => {
    let now = 0;
    const limiter = createRateLimiter(() => now);
    for (let i = 0; i < 20; i++) {
      now += 1000;
      expect((await limiter.decide('k', 'free')).refused).toBeUndefined();
    }
    now += 1000;
    const refused = await limiter.decide('k', 'free');
    expect(refused.refused).toBeInstanceOf(RateLimitError);
    expect(refused).toMatchObject({ limit: 20, remaining: 0, resetSeconds: 40 });
    expect(refused.refused?.retryAfterSeconds).toBe(40);
    now = 61_001; // the first request has left the window
    expect(await limiter.decide('k', 'free')).toMatchObject({ remaining: 0, resetSeconds: 1 });
    expect((await limiter.decide('other', 'samurai')).remaining).toBe(599);
  });
});

describe('simulator directives and safety guard', () => {
  it('parses sim directives anywhere in the prompt', () => {
    expect(parseDirectives('a cat sim:fail')).toEqual({ fail: true });
    expect(parseDirectives('sim:delay=250 sim:tokens=9 x')).toEqual({ fail: false, delayMs: 250, tokens: 9 });
    expect(parseDirectives('simulated failure')).toEqual({ fail: false });
    expect(parseDirectives('hold sim:until=1700000000000 sim:fail')).toEqual({
      fail: true,
      untilEpochMs: 1700000000000,
    });
    // A conversation's newest turn wins.
    expect(parseDirectives('hi sim:tokens=3 sim:tool=a\nagain sim:tokens=4 sim:tool=b')).toEqual({
      fail: false,
      tokens: 4,
      tool: 'b',
    });
  });
  it('refuses listed subjects as whole words only', () => {
    expect(isPromptRefused('graphic GORE in a car')).toBe(true);
    expect(isPromptRefused('a gorecki symphony poster')).toBe(false);
  });
});

describe('configuration', () => {
  it('has defaults and names the variable that is wrong', () => {
    expect(loadConfig({}).PORT).toBe(3000);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ TEMPORAL_ADDRESS: 'nowhere' })).toThrow(/TEMPORAL_ADDRESS/);
  });
  it('requires the secrets in production instead of generating them', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: 'a'.repeat(20) })).toThrow(
      /URL_SIGNING_SECRET: is required/,
    );
    expect(() =>
      loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: 'a'.repeat(20), URL_SIGNING_SECRET: 'b'.repeat(20) }),
    ).toThrow(/WEBHOOK_SECRET_KEY: is required/);
    expect(
      loadConfig({
        NODE_ENV: 'production',
        ADMIN_TOKEN: 'a'.repeat(20),
        URL_SIGNING_SECRET: 'b'.repeat(20),
        WEBHOOK_SECRET_KEY: 'c'.repeat(20),
      }).NODE_ENV,
    ).toBe('production');
  });
});
