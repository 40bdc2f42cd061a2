import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createJwksCache,
  keysOfJwks,
  CallbackSignatureError,
  signFalWebhook,
  signStandardWebhook,
  TOLERANCE_S,
  verifyFalWebhook,
  verifyStandardWebhook,
} from '../../../../core/providers/callback-signatures';

const NOW_S = 2_000_000_000;
const NOW_MS = NOW_S * 1000;
const body = Buffer.from('{"request_id":"req-1","status":"OK"}');

describe("fal's ed25519 webhooks", () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });

  it('verify with a key of the JWKS (a padded x too), and answer the request id', () => {
    const keys = keysOfJwks({
      keys: [
        { kty: 'RSA', n: 'x', e: 'AQAB' },
        { kty: 'OKP', crv: 'Ed25519', x: `${jwk.x}=` },
      ],
    });
    expect(keys).toHaveLength(1);
    expect(verifyFalWebhook(keys, signFalWebhook(privateKey, 'req-1', 'user-1', NOW_S, body), body, NOW_MS)).toEqual({
      requestId: 'req-1',
    });
  });

  it('refuse another key, another body, another request id, a stale or future timestamp, and missing headers', () => {
    const keys = keysOfJwks({ keys: [jwk] });
    const other = generateKeyPairSync('ed25519').privateKey;
    const good = signFalWebhook(privateKey, 'req-1', 'user-1', NOW_S, body);
    const cases: [string, Record<string, string>, Buffer, number][] = [
      ['another key', signFalWebhook(other, 'req-1', 'user-1', NOW_S, body), body, NOW_MS],
      ['another body', good, Buffer.from('{}'), NOW_MS],
      ['another request id', { ...good, 'x-fal-webhook-request-id': 'req-2' }, body, NOW_MS],
      ['stale', good, body, (NOW_S + TOLERANCE_S + 1) * 1000],
      ['from the future', good, body, (NOW_S - TOLERANCE_S - 1) * 1000],
      ['no signature', { ...good, 'x-fal-webhook-signature': '' }, body, NOW_MS],
      ['not hex', { ...good, 'x-fal-webhook-signature': 'z'.repeat(128) }, body, NOW_MS],
    ];
    for (const [what, headers, b, now] of cases)
      expect(() => verifyFalWebhook(keys, headers, b, now), what).toThrow(CallbackSignatureError);
    expect(verifyFalWebhook(keys, good, body, (NOW_S + TOLERANCE_S) * 1000)).toEqual({ requestId: 'req-1' });
  });

  it('keys are fetched once per ttl, and fetched again on demand at most once per refresh period', async () => {
    let fetches = 0;
    let now = 0;
    const cache = createJwksCache('http://keys.test/jwks.json', {
      fetchJson: async () => (fetches++, { keys: [jwk] }),
      ttlMs: 10_000,
      refreshMs: 1_000,
      now: () => now,
    });
    await cache.keys();
    await cache.keys();
    expect(fetches).toBe(1);
    expect(await cache.refreshed()).toBeUndefined();
    now = 1_500;
    expect(await cache.refreshed()).toHaveLength(1);
    expect(fetches).toBe(2);
    now = 20_000;
    await cache.keys();
    expect(fetches).toBe(3);
  });
});

describe('Standard Webhooks (Replicate)', () => {
  const secret = `whsec_${Buffer.from('a secret of thirty-two bytes....').toString('base64')}`;

  it('verify any v1 signature of the list, and answer the webhook id', () => {
    const signed = signStandardWebhook(secret, 'msg_1', NOW_S, body);
    const listed = {
      ...signed,
      'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')} v2,abc ${signed['webhook-signature']}`,
    };
    expect(verifyStandardWebhook(secret, listed, body, NOW_MS)).toEqual({ webhookId: 'msg_1' });
  });

  it('refuse another secret, another body, another id, a stale timestamp, and missing headers', () => {
    const good = signStandardWebhook(secret, 'msg_1', NOW_S, body);
    const cases: [string, Record<string, string>, Buffer, number][] = [
      [
        'another secret',
        signStandardWebhook(
          `whsec_${Buffer.from('another secret, also 32 bytes...').toString('base64')}`,
          'msg_1',
          NOW_S,
          body,
        ),
        body,
        NOW_MS,
      ],
      ['another body', good, Buffer.from('{}'), NOW_MS],
      ['another id', { ...good, 'webhook-id': 'msg_2' }, body, NOW_MS],
      ['stale', good, body, (NOW_S + TOLERANCE_S + 1) * 1000],
      ['no id', { ...good, 'webhook-id': '' }, body, NOW_MS],
      ['a timestamp that is no number', { ...good, 'webhook-timestamp': 'soon' }, body, NOW_MS],
    ];
    for (const [what, headers, b, now] of cases)
      expect(() => verifyStandardWebhook(secret, headers, b, now), what).toThrow(CallbackSignatureError);
  });
});
