import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys look like `gsk_<30 base62 chars><6 char checksum>`: the checksum (CRC32 in base62, as
 * GitHub's tokens do) lets us reject a mistyped key without a database lookup, and lets secret
 * scanners recognise a real key. Only the SHA-256 of the whole key is stored.
 */
const PREFIX = 'gsk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 30;
const CHECKSUM_LENGTH = 6;

export const CAPABILITIES = ['image', 'video', 'chat', 'upscale'] as const;
export type Capability = (typeof CAPABILITIES)[number];

/**
 * What a key may hold: the generation capabilities; `webhooks` (register and manage the account's
 * endpoints, which receive signed output URLs of every generation of the account); `customers`
 * (read the account's customers and set their budgets and rate limits); `audit` (read the
 * account's audit log).
 */
export const MANAGEMENT_SCOPES = ['webhooks', 'customers', 'audit'] as const;
export const SCOPES = [...CAPABILITIES, ...MANAGEMENT_SCOPES] as const;
export type Scope = (typeof SCOPES)[number];

export function generateApiKey(): string {
  const bytes = randomBytes(BODY_LENGTH);
  let body = '';
  for (const b of bytes) body += BASE62[b % 62]!;
  return `${PREFIX}${body}${checksum(body)}`;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** True when the key has our shape and its checksum matches; says nothing of revocation. */
export function isWellFormedApiKey(key: string): boolean {
  if (!key.startsWith(PREFIX) || key.length !== PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH) return false;
  const body = key.slice(PREFIX.length, PREFIX.length + BODY_LENGTH);
  return /^[0-9A-Za-z]+$/.test(body) && key.endsWith(checksum(body));
}

/** Accepts both spellings of a capability (`image` and group A's `generate:image`) and `webhooks`. */
export function normaliseScope(scope: string): Scope | undefined {
  if ((MANAGEMENT_SCOPES as readonly string[]).includes(scope)) return scope as Scope;
  const bare = scope.startsWith('generate:') ? scope.slice('generate:'.length) : scope;
  return (CAPABILITIES as readonly string[]).includes(bare) ? (bare as Capability) : undefined;
}

function checksum(body: string): string {
  let n = crc32(Buffer.from(body, 'utf8'));
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62]! + out;
    n = Math.floor(n / 62);
  }
  return out;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
