import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';

/**
 * The local output store (DESIGN §6 "Output URLs"): files under one root directory, served
 * through URLs signed with HMAC-SHA256 over the key and the expiry, valid 24 h by default.
 *
 * Layout: the file for key `gen_abc/output.png` is `<root>/gen_abc/output.png`; its content type
 * is kept in a sidecar `<root>/.meta/gen_abc/output.png.json`, so `open` answers with what `put`
 * was told rather than guessing from the extension. Keys cannot name anything starting with a dot
 * (see `isValidKey`), so neither the sidecars nor the temporary files of a write in progress can be
 * reached through a URL.
 */
export interface OutputStore {
  /** Stores `data` under `key` (e.g. `gen_abc/output.png`); readers see the old file or the new one, never a part. */
  put(key: string, data: Buffer, contentType: string): Promise<void>;
  /** The bytes stored under `key`, for the service's own use (e.g. an upscale input); undefined when absent. */
  get(key: string): Promise<Buffer | undefined>;
  /** Deletes what is stored under `key`; a key with nothing stored under it is no error. */
  remove(key: string): Promise<void>;
  /** A fresh URL for `key`, valid `ttlSeconds` after `now` (async: a remote store presigns). */
  signedUrl(key: string, now?: Date): Promise<string>;
  /**
   * The stored file behind a URL served by the API (`/files/...`); undefined when the signature is
   * invalid or expired or the file is missing. Stores whose URLs point elsewhere always answer undefined.
   */
  open(key: string, expires: string, signature: string, now?: Date): Promise<StoredFile | undefined>;
}

export interface StoredFile {
  path: string;
  contentType: string;
  size: number;
}

export interface LocalStoreOptions {
  rootDir: string;
  /** Origin (and optional path prefix) the API is reached at, e.g. `https://api.example.com`. */
  publicBaseUrl: string;
  signingSecret: string;
  ttlSeconds?: number;
}

export const DEFAULT_URL_TTL_SECONDS = 24 * 60 * 60;
const META_DIR = '.meta';
const FALLBACK_CONTENT_TYPE = 'application/octet-stream';

/** A key that could escape the root or is not one the service makes; a bug in the caller, never retried. */
export class InvalidStorageKeyError extends Error {
  constructor(key: string) {
    super(`invalid storage key ${JSON.stringify(key)}`);
    this.name = 'InvalidStorageKeyError';
  }
}

export function createLocalStore(opts: LocalStoreOptions): OutputStore {
  if (opts.signingSecret.length === 0) throw new Error('the output store needs a signing secret');
  const ttl = opts.ttlSeconds ?? DEFAULT_URL_TTL_SECONDS;
  if (!Number.isInteger(ttl) || ttl <= 0) throw new Error(`ttlSeconds must be a positive integer, got ${ttl}`);
  const root = resolve(opts.rootDir);
  const baseUrl = opts.publicBaseUrl.replace(/\/+$/, '');

  const sign = (key: string, expires: string): Buffer =>
    createHmac('sha256', opts.signingSecret).update(`${key}\n${expires}`).digest();

  const pathOf = (key: string): string => {
    if (!isValidKey(key)) throw new InvalidStorageKeyError(key);
    const path = join(root, key);
    // Belt and braces: the key rules already forbid leaving the root.
    if (!path.startsWith(root + sep)) throw new InvalidStorageKeyError(key);
    return path;
  };
  const metaPathOf = (key: string): string => join(root, META_DIR, `${key}.json`);

  return {
    async put(key, data, contentType) {
      const path = pathOf(key);
      // The sidecar goes first: a reader that finds the file then also finds its type.
      await writeAtomically(metaPathOf(key), JSON.stringify({ contentType }));
      await writeAtomically(path, data);
    },

    async get(key) {
      try {
        return await readFile(pathOf(key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },

    async remove(key) {
      // The file first: a sidecar without its file is never read, a file without its sidecar would be.
      await rm(pathOf(key), { force: true });
      await rm(metaPathOf(key), { force: true });
    },

    async signedUrl(key, now = new Date()) {
      pathOf(key);
      const expires = String(Math.floor(now.getTime() / 1000) + ttl);
      const signature = sign(key, expires).toString('hex');
      // Valid keys hold only URL-safe characters, so the key goes into the path as it is.
      return `${baseUrl}/files/${key}?expires=${expires}&signature=${signature}`;
    },

    async open(key, expires, signature, now = new Date()) {
      // Everything about the request is checked before the file system is touched.
      if (!isValidKey(key) || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/i.test(signature)) return undefined;
      if (!timingSafeEqual(Buffer.from(signature, 'hex'), sign(key, expires))) return undefined;
      if (Math.floor(now.getTime() / 1000) > Number(expires)) return undefined;

      const path = pathOf(key);
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) return undefined;
      return { path, contentType: await readContentType(metaPathOf(key)), size: info.size };
    },
  };
}

/**
 * Slash-separated segments of `[A-Za-z0-9_.-]`, none empty and none starting with a dot: this
 * rules out `..`, absolute paths, backslashes and hidden files in one rule.
 */
export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > 512) return false;
  return key.split('/').every((segment) => /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(segment) && !segment.includes('..'));
}

/** Write next to the target and rename over it: a rename within a directory is atomic. */
async function writeAtomically(path: string, data: Buffer | string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temp = join(dirname(path), `.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(temp, data);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

async function readContentType(metaPath: string): Promise<string> {
  try {
    const meta = JSON.parse(await readFile(metaPath, 'utf8')) as { contentType?: unknown };
    return typeof meta.contentType === 'string' ? meta.contentType : FALLBACK_CONTENT_TYPE;
  } catch {
    // A file written before its sidecar existed is still served, just without a specific type.
    return FALLBACK_CONTENT_TYPE;
  }
}
