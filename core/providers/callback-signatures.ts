import { createHash, createHmac, createPublicKey, sign, timingSafeEqual, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * How upstreams sign the webhooks they send us, checked on the raw bytes before anything is parsed
 * (STYLE: verify before parsing, timingSafeEqual, a timestamp tolerance, an injectable clock, and a
 * helper that signs test payloads).
 *
 * - fal: ed25519 over `{request id}\n{user id}\n{timestamp}\n{sha256 hex of the body}`, the
 *   signature in hex in X-Fal-Webhook-Signature, the public keys in a JSON Web Key Set
 *   (`{ keys: [{ kty: "OKP", crv: "Ed25519", x }] }`) that fal publishes; any of them may have signed.
 * - Replicate: Standard Webhooks: HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` with the
 *   base64 secret after `whsec_`, sent as space-separated `v1,<base64>` signatures.
 *
 * Both refuse a timestamp more than TOLERANCE_S from now, so a captured webhook cannot be replayed
 * later; one replayed within the window is caught by its id (core/db/upstream-jobs.ts).
 */
export const TOLERANCE_S = 300;

export class CallbackSignatureError extends Error {
  override readonly name = 'CallbackSignatureError';
}

export type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
};

function checkTimestamp(value: string | undefined, nowMs: number): string {
  if (value === undefined || !/^\d{1,12}$/.test(value))
    throw new CallbackSignatureError('the webhook has no timestamp');
  if (Math.abs(nowMs / 1000 - Number(value)) > TOLERANCE_S)
    throw new CallbackSignatureError('the webhook timestamp is outside the tolerance');
  return value;
}

/** fal's signed message. */
function falMessage(requestId: string, userId: string, timestamp: string, body: Buffer): Buffer {
  return Buffer.from(
    `${requestId}\n${userId}\n${timestamp}\n${createHash('sha256').update(body).digest('hex')}`,
    'utf8',
  );
}

/** A fal webhook signed by one of `keys`: answers the request (job) id it is about. */
export function verifyFalWebhook(
  keys: readonly KeyObject[],
  headers: Headers,
  body: Buffer,
  nowMs: number,
): { requestId: string } {
  const requestId = header(headers, 'x-fal-webhook-request-id');
  const userId = header(headers, 'x-fal-webhook-user-id');
  const signature = header(headers, 'x-fal-webhook-signature');
  if (!requestId || !userId || !signature || !/^[0-9a-f]{128}$/i.test(signature))
    throw new CallbackSignatureError('the fal webhook signature headers are missing or malformed');
  const timestamp = checkTimestamp(header(headers, 'x-fal-webhook-timestamp'), nowMs);
  const message = falMessage(requestId, userId, timestamp, body);
  const sig = Buffer.from(signature, 'hex');
  if (!keys.some((key) => verify(null, message, key, sig)))
    throw new CallbackSignatureError('the fal webhook signature does not verify');
  return { requestId };
}

/** The headers fal would send with `body` (for tests and local upstreams). */
export function signFalWebhook(
  privateKey: KeyObject,
  requestId: string,
  userId: string,
  timestampS: number,
  body: Buffer,
): Record<string, string> {
  const timestamp = String(timestampS);
  return {
    'x-fal-webhook-request-id': requestId,
    'x-fal-webhook-user-id': userId,
    'x-fal-webhook-timestamp': timestamp,
    'x-fal-webhook-signature': sign(null, falMessage(requestId, userId, timestamp, body), privateKey).toString('hex'),
  };
}

/** The Ed25519 keys of a JSON Web Key Set; anything else in it is skipped. */
export function keysOfJwks(jwks: unknown): KeyObject[] {
  const keys = (jwks as { keys?: unknown } | undefined)?.keys;
  if (!Array.isArray(keys)) return [];
  return keys.flatMap((k: { kty?: unknown; crv?: unknown; x?: unknown }) => {
    if (k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string') return [];
    try {
      // fal's set has been seen padding its base64url `x`; JWK wants it bare.
      return [createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x.replace(/=+$/, '') }, format: 'jwk' })];
    } catch {
      return [];
    }
  });
}

/**
 * fal's keys, fetched from the configured JWKS URL and kept for `ttlMs`. A signature none of the
 * kept keys verifies fetches them again (fal may have rotated), at most once per `refreshMs`, so a
 * flood of forgeries cannot make us hammer the key server.
 */
export function createJwksCache(
  url: string,
  options: {
    fetchJson?: (url: string) => Promise<unknown>;
    ttlMs?: number;
    refreshMs?: number;
    now?: () => number;
  } = {},
) {
  const fetchJson =
    options.fetchJson ??
    (async (u: string) => {
      const res = await fetch(u, { signal: AbortSignal.timeout(5_000), redirect: 'error' });
      if (!res.ok) throw new Error(`the JWKS at ${u} answered ${res.status}`);
      return res.json();
    });
  const ttlMs = options.ttlMs ?? 3_600_000;
  const refreshMs = options.refreshMs ?? 60_000;
  const now = options.now ?? Date.now;
  let kept: { keys: KeyObject[]; at: number } | undefined;
  let loading: Promise<KeyObject[]> | undefined;
  const load = (): Promise<KeyObject[]> =>
    (loading ??= fetchJson(url)
      .then((jwks) => {
        kept = { keys: keysOfJwks(jwks), at: now() };
        return kept.keys;
      })
      .finally(() => {
        loading = undefined;
      }));
  return {
    async keys(): Promise<KeyObject[]> {
      return kept && now() - kept.at < ttlMs ? kept.keys : load();
    },
    /** Fresh keys, unless they were fetched within `refreshMs` (then undefined: nothing new to try). */
    async refreshed(): Promise<KeyObject[] | undefined> {
      return kept && now() - kept.at < refreshMs ? undefined : load();
    },
  };
}
export type JwksCache = ReturnType<typeof createJwksCache>;

/** A Standard Webhooks request signed with `secret` (`whsec_…`): answers its webhook id. */
export function verifyStandardWebhook(
  secret: string,
  headers: Headers,
  body: Buffer,
  nowMs: number,
): { webhookId: string } {
  const id = header(headers, 'webhook-id');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !signatures) throw new CallbackSignatureError('the webhook-id or webhook-signature header is missing');
  const timestamp = checkTimestamp(header(headers, 'webhook-timestamp'), nowMs);
  const expected = standardSignature(secret, id, timestamp, body);
  for (const part of signatures.split(' ')) {
    const [version, value] = part.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { webhookId: id };
  }
  throw new CallbackSignatureError('the webhook signature does not verify');
}

/** The headers a Standard Webhooks sender would send with `body` (for tests and local upstreams). */
export function signStandardWebhook(
  secret: string,
  id: string,
  timestampS: number,
  body: Buffer,
): Record<string, string> {
  const timestamp = String(timestampS);
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${standardSignature(secret, id, timestamp, body).toString('base64')}`,
  };
}

function standardSignature(secret: string, id: string, timestamp: string, body: Buffer): Buffer {
  return createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64'))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest();
}
