import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHmac } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalStore, InvalidStorageKeyError, type OutputStore } from '../../../../core/storage/output-store';

const SECRET = 'test-signing-secret';
const DAY_MS = 24 * 60 * 60 * 1000;
const T0 = new Date('2030-01-01T00:00:00.250Z');

let parent: string;
let root: string;
let store: OutputStore;

beforeAll(async () => {
  parent = await mkdtemp(join(tmpdir(), 'storage-test-'));
  root = join(parent, 'outputs');
  store = createLocalStore({ rootDir: root, publicBaseUrl: 'https://api.example.test/', signingSecret: SECRET });
  // A file just outside the root, the prize of a traversal.
  await writeFile(join(parent, 'secret.txt'), 'do not serve');
});

afterAll(async () => {
  await rm(parent, { recursive: true, force: true });
});

/** The parts `open` takes, read back from a signed URL as the HTTP route would. */
function parseSigned(url: string): { key: string; expires: string; signature: string; url: URL } {
  const parsed = new URL(url);
  return {
    url: parsed,
    key: parsed.pathname.replace(/^\/files\//, ''),
    expires: parsed.searchParams.get('expires') ?? '',
    signature: parsed.searchParams.get('signature') ?? '',
  };
}

function hmac(key: string, expires: string): string {
  return createHmac('sha256', SECRET).update(`${key}\n${expires}`).digest('hex');
}

describe('local output store', () => {
  it('serves what was put through a signed URL', async () => {
    const data = Buffer.from('png bytes');
    await store.put('gen_abc/output.png', data, 'image/png');

    const signed = parseSigned(await store.signedUrl('gen_abc/output.png', T0));
    expect(signed.url.origin + signed.url.pathname).toBe('https://api.example.test/files/gen_abc/output.png');
    expect(signed.expires).toBe(String(Math.floor(T0.getTime() / 1000) + 86_400));
    expect(signed.signature).toBe(hmac('gen_abc/output.png', signed.expires));

    const file = await store.open(signed.key, signed.expires, signed.signature, T0);
    expect(file).toMatchObject({ contentType: 'image/png', size: data.length });
    expect(await readFile(file!.path)).toEqual(data);
  });

  it('gives a fresh URL at each call', async () => {
    const first = await store.signedUrl('gen_abc/output.png', T0);
    const later = await store.signedUrl('gen_abc/output.png', new Date(T0.getTime() + 60_000));
    expect(later).not.toBe(first);
  });

  it('honours the URL for 24 h and not a second longer', async () => {
    const { key, expires, signature } = parseSigned(await store.signedUrl('gen_abc/output.png', T0));
    expect(await store.open(key, expires, signature, new Date(T0.getTime() + DAY_MS - 250))).toBeDefined();
    expect(await store.open(key, expires, signature, new Date(T0.getTime() + DAY_MS + 1000))).toBeUndefined();
  });

  it('refuses a tampered signature, key or expiry', async () => {
    await store.put('gen_other/output.png', Buffer.from('other'), 'image/png');
    const { key, expires, signature } = parseSigned(await store.signedUrl('gen_abc/output.png', T0));
    const flipped = (signature[0] === 'a' ? 'b' : 'a') + signature.slice(1);

    expect(await store.open(key, expires, flipped, T0)).toBeUndefined();
    expect(await store.open('gen_other/output.png', expires, signature, T0)).toBeUndefined();
    expect(await store.open(key, String(Number(expires) + 86_400), signature, T0)).toBeUndefined();
    expect(await store.open(key, expires, signature.slice(0, 32), T0)).toBeUndefined();
    expect(await store.open(key, expires, '', T0)).toBeUndefined();
  });

  it('answers undefined for a validly signed key with no file', async () => {
    const { key, expires, signature } = parseSigned(await store.signedUrl('gen_missing/output.png', T0));
    expect(await store.open(key, expires, signature, T0)).toBeUndefined();
  });

  it.each([
    '../secret.txt',
    'gen_abc/../../secret.txt',
    '/etc/passwd',
    'gen_abc\\..\\..\\secret.txt',
    'gen_abc//output.png',
    '.meta/gen_abc/output.png.json',
    'gen_abc/.tmp-123',
    'gen abc/output.png',
    '%2e%2e/secret.txt',
    '',
  ])('refuses the key %j', async (badKey) => {
    // Correctly signed, so only the key rules stand between the URL and the file.
    const expires = String(Math.floor(T0.getTime() / 1000) + 60);
    expect(await store.open(badKey, expires, hmac(badKey, expires), T0)).toBeUndefined();
    await expect(store.signedUrl(badKey, T0)).rejects.toBeInstanceOf(InvalidStorageKeyError);
    await expect(store.put(badKey, Buffer.from('x'), 'text/plain')).rejects.toBeInstanceOf(InvalidStorageKeyError);
  });

  it('replaces a file whole and leaves no temporary files behind', async () => {
    await store.put('gen_replace/output.mp4', Buffer.from('first'), 'video/webm');
    await store.put('gen_replace/output.mp4', Buffer.from('second version'), 'video/webm');
    const { key, expires, signature } = parseSigned(await store.signedUrl('gen_replace/output.mp4', T0));
    const file = await store.open(key, expires, signature, T0);
    expect(file).toMatchObject({ contentType: 'video/webm', size: 'second version'.length });
    expect(await readdir(join(root, 'gen_replace'))).toEqual(['output.mp4']);
  });
});

describe('remove', () => {
  it('deletes a file and its content type, so that neither get nor a signed URL finds it; a missing key is no error', async () => {
    await store.put('gen_removed/output.webm', Buffer.from('video'), 'video/webm');
    const { key, expires, signature } = parseSigned(await store.signedUrl('gen_removed/output.webm', T0));
    await store.remove('gen_removed/output.webm');
    expect(await store.get('gen_removed/output.webm')).toBeUndefined();
    expect(await store.open(key, expires, signature, T0)).toBeUndefined();
    await expect(store.remove('gen_removed/output.webm')).resolves.toBeUndefined();
    await expect(store.remove('../secret.txt')).rejects.toBeInstanceOf(InvalidStorageKeyError);
  });
});
