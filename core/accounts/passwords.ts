import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import type { ScryptOptions } from 'node:crypto';
import { dictionary } from '@zxcvbn-ts/language-common';

/**
 * Dashboard passwords, hashed with scrypt (node:crypto, no native add-on): N = 2^15, r = 8, p = 1,
 * a 16-byte random salt, a 32-byte hash (OWASP's scrypt parameters; ~32 MiB and ~100 ms per hash
 * here). The parameters are stored with each hash, so they can be raised later without breaking
 * older hashes. Format: `scrypt$<N>$<r>$<p>$<salt>$<hash>` (base64url).
 */
export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

export const SCRYPT_PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;

/** The common passwords (zxcvbn-ts's list of about 49,000, shipped in its package), lower-cased; built on first use. */
let common: ReadonlySet<string> | undefined;
const commonPasswords = (): ReadonlySet<string> =>
  (common ??= new Set(dictionary['passwords-common'].map((p) => p.normalize('NFKC').toLowerCase())));

/**
 * Why a password may not be chosen, or undefined when it may (NIST SP 800-63B 3.1.1.2, OWASP ASVS
 * V2.1.7): its length, a password on the list of common ones (compared without case), or the
 * account's own email address or the part before its `@`. Checked when a password is set, never
 * at login: a password chosen under an older rule keeps working.
 */
export function passwordRefusal(password: string, email?: string): string | undefined {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH)
    return `The password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`;
  const folded = password.normalize('NFKC').toLowerCase();
  if (commonPasswords().has(folded))
    return 'This password is on a list of commonly used passwords that attackers try first; choose another.';
  const address = email?.trim().toLowerCase();
  if (address && (folded === address || folded === address.slice(0, address.lastIndexOf('@'))))
    return 'The password must not be your email address or its name part; choose another.';
  return undefined;
}

function derive(password: string, salt: Buffer, params: ScryptParams, keyLength: number): Promise<Buffer> {
  // scrypt needs 128 · N · r bytes; Node's default ceiling (32 MiB) is just below that for N = 2^15.
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string, params: ScryptParams = SCRYPT_PARAMS): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, params, KEY_LENGTH);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Compares in constant time; a malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(
    password,
    Buffer.from(salt, 'base64url'),
    { N: Number(n), r: Number(r), p: Number(p) },
    expected.length,
  );
  return timingSafeEqual(actual, expected);
}

/**
 * A login for an unknown email, or a user without a password yet, still costs one hash, so the
 * answer's timing does not tell which emails have users.
 */
let dummy: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<false> {
  dummy ??= hashPassword('not a password of anyone');
  await verifyPassword(password, await dummy);
  return false;
}

/** A random secret for a link or a cookie (256 bits, base64url) and the hash that is stored. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
