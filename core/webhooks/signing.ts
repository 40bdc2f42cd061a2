import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook secrets and signatures (spec "Events"; DESIGN §6 "Standard Webhooks too").
 *
 * A secret is `whsec_` + base64 of 32 random bytes. Two signatures are sent on every delivery:
 * - `X-Service-Signature: t=<unix>,v1=<hex>`: HMAC-SHA256 keyed with the secret string exactly as
 *   shown (its UTF-8 bytes, `whsec_` included) over `<t>.<raw body>`; one `v1=` per valid secret.
 * - Standard Webhooks: `webhook-signature: v1,<base64>` of HMAC-SHA256 keyed with the base64-decoded
 *   part after `whsec_`, over `<webhook-id>.<webhook-timestamp>.<raw body>`; space-separated.
 */
export const SECRET_PREFIX = 'whsec_';
export const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{43}=$/;

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

export interface SignInput {
  deliveryId: string;
  event: string;
  /** Unix seconds. */
  timestamp: number;
  body: string;
  /** Every secret valid now, newest first. */
  secrets: readonly string[];
}

/** `v1` of X-Service-Signature: lowercase hex. */
export function serviceSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${timestamp}.${body}`).digest('hex');
}

/** The Standard Webhooks signature: base64, keyed with the decoded secret. */
export function standardSignature(secret: string, deliveryId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return createHmac('sha256', key).update(`${deliveryId}.${timestamp}.${body}`).digest('base64');
}

/** Every header of a delivery but the content length. */
export function deliveryHeaders(input: SignInput): Record<string, string> {
  const { deliveryId, event, timestamp, body, secrets } = input;
  return {
    'content-type': 'application/json',
    'user-agent': 'gensvc-webhooks/1',
    'x-service-event': event,
    'x-service-delivery': deliveryId,
    'x-service-signature': [`t=${timestamp}`, ...secrets.map((s) => `v1=${serviceSignature(s, timestamp, body)}`)].join(
      ',',
    ),
    'webhook-id': deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => `v1,${standardSignature(s, deliveryId, timestamp, body)}`).join(' '),
  };
}

/**
 * Checks an `X-Service-Signature` the way a receiver should: parse, check the timestamp against
 * the tolerance, recompute and compare in constant time. For tests and for people signing test
 * payloads; the example receiver (examples/webhook-receiver) carries its own copy.
 */
export function verifyServiceSignature(
  header: string,
  body: string,
  secret: string,
  opts: { nowSeconds: number; toleranceSeconds?: number },
): boolean {
  const parts = header.split(',').map((p) => p.trim());
  const t = Number(parts.find((p) => p.startsWith('t='))?.slice(2));
  if (!Number.isInteger(t) || Math.abs(opts.nowSeconds - t) > (opts.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(serviceSignature(secret, t, body), 'hex');
  return parts
    .filter((p) => p.startsWith('v1='))
    .some((p) => {
      const given = Buffer.from(p.slice(3), 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
