import { createHash } from 'node:crypto';
import { InvalidRequestError } from './errors';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** The header's value, checked: 1 to 255 visible ASCII characters. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !KEY_PATTERN.test(value)) {
    throw new InvalidRequestError('Idempotency-Key must be 1 to 255 visible ASCII characters.', 'Idempotency-Key');
  }
  return value;
}

/** A hash of what was asked, independent of key order and spacing, so a true repeat matches. */
export function requestHash(route: string, body: unknown): Buffer {
  return createHash('sha256').update(route).update('\n').update(canonicalJson(body)).digest();
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
