// The S3 output store against a real S3-compatible server (MinIO, built by `npm run minio`):
// what is put is served by the store itself through a presigned URL, byte for byte, for 24 h;
// an expired or altered URL is refused; another instance (another machine) sees the same files.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { InvalidStorageKeyError } from '../../../../core/storage/output-store';
import { createS3Store, S3StoreError } from '../../../../core/storage/s3';
import type { S3Store, S3StoreOptions } from '../../../../core/storage/s3';
import { startMinio } from '../../../support/minio-server';
import type { MinioServer } from '../../../support/minio-server';

let minio: MinioServer;
const stores: S3Store[] = [];
const DAY_MS = 24 * 3600 * 1000;

function store(overrides: Partial<S3StoreOptions> = {}): S3Store {
  const s = createS3Store({
    bucket: 'outputs',
    region: 'us-east-1',
    endpoint: minio.endpoint,
    forcePathStyle: true,
    accessKeyId: minio.accessKeyId,
    secretAccessKey: minio.secretAccessKey,
    ...overrides,
  });
  stores.push(s);
  return s;
}

async function get(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

beforeAll(async () => {
  minio = await startMinio(join(inject('testDataDir'), `minio-${randomUUID()}`));
  await store().ensureBucket();
});

afterAll(async () => {
  for (const s of stores) s.close();
  await minio?.stop();
});

describe('S3 output store', () => {
  it('serves what was put, with its type, through a presigned URL valid 24 h', async () => {
    const s = store();
    const data = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    await s.put('gen_s3one/output.png', data, 'image/png');

    const url = new URL(await s.signedUrl('gen_s3one/output.png'));
    expect(`${url.origin}${url.pathname}`).toBe(`${minio.endpoint}/outputs/gen_s3one/output.png`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('86400');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');

    const file = await get(url.toString());
    expect(file.status).toBe(200);
    expect(file.type).toBe('image/png');
    expect(file.bytes.equals(data)).toBe(true);
  });

  it("is shared: a second store (another worker or API machine) serves the first one's file", async () => {
    await store().put('gen_s3shared/output.txt', Buffer.from('hello from worker 1'), 'text/plain; charset=utf-8');
    const file = await get(await store().signedUrl('gen_s3shared/output.txt'));
    expect(file).toMatchObject({ status: 200, type: 'text/plain; charset=utf-8' });
    expect(file.bytes.toString()).toBe('hello from worker 1');
  });

  it('removes a file, so that neither the store nor its URL serves it; a missing key is no error', async () => {
    const s = store();
    await s.put('gen_s3removed/output.webm', Buffer.from('video'), 'video/webm');
    const url = await s.signedUrl('gen_s3removed/output.webm');
    await s.remove('gen_s3removed/output.webm');
    expect(await s.get('gen_s3removed/output.webm')).toBeUndefined();
    expect((await get(url)).status).toBe(404);
    await expect(s.remove('gen_s3removed/output.webm')).resolves.toBeUndefined();
  });

  it('gives a fresh URL at each read', async () => {
    const s = store();
    const now = Date.now();
    const first = await s.signedUrl('gen_s3one/output.png', new Date(now));
    const later = await s.signedUrl('gen_s3one/output.png', new Date(now + 60_000));
    expect(later).not.toBe(first);
    expect((await get(later)).status).toBe(200);
  });

  it('refuses a URL older than 24 h, and accepts one just inside', async () => {
    const s = store();
    expect((await get(await s.signedUrl('gen_s3one/output.png', new Date(Date.now() - DAY_MS + 60_000)))).status).toBe(
      200,
    );
    const expired = await get(await s.signedUrl('gen_s3one/output.png', new Date(Date.now() - DAY_MS - 60_000)));
    expect(expired.status).toBe(403);
    expect(expired.bytes.toString()).toMatch(/expired/i);
  });

  it('refuses a tampered signature, key or expiry', async () => {
    const s = store();
    await s.put('gen_s3other/output.png', Buffer.from('bytes of another file'), 'image/png');
    const url = new URL(await s.signedUrl('gen_s3one/output.png'));

    const signature = url.searchParams.get('X-Amz-Signature')!;
    const flipped = new URL(url);
    flipped.searchParams.set('X-Amz-Signature', (signature[0] === 'a' ? 'b' : 'a') + signature.slice(1));
    const otherKey = new URL(url);
    otherKey.pathname = '/outputs/gen_s3other/output.png';
    const longer = new URL(url);
    longer.searchParams.set('X-Amz-Expires', '604800');
    const unsigned = new URL(url);
    unsigned.search = '';

    for (const tampered of [flipped, otherKey, longer, unsigned]) {
      const res = await get(tampered.toString());
      expect(res.status, tampered.toString()).toBe(403);
      expect(res.bytes.toString()).not.toContain('bytes of another file');
    }
  });

  it('signs for the public endpoint clients use, while talking to the store at its internal one', async () => {
    const publicEndpoint = minio.endpoint.replace('127.0.0.1', 'localhost');
    const s = store({ publicEndpoint });
    await s.put('gen_s3public/output.txt', Buffer.from('public'), 'text/plain');
    const url = await s.signedUrl('gen_s3public/output.txt');
    expect(url.startsWith(`${publicEndpoint}/outputs/gen_s3public/output.txt?`)).toBe(true);
    expect((await get(url)).bytes.toString()).toBe('public');
    // The host is signed: the same URL at the internal address is refused.
    expect((await get(url.replace(publicEndpoint, minio.endpoint))).status).toBe(403);
  });

  it('makes a missing bucket once, even when several instances start at the same moment', async () => {
    const bucket = `b-${randomUUID()}`;
    await Promise.all([
      store({ bucket }).ensureBucket(),
      store({ bucket }).ensureBucket(),
      store({ bucket }).ensureBucket(),
    ]);
    await store({ bucket }).ensureBucket();
    await store({ bucket }).put('gen_x/output.txt', Buffer.from('x'), 'text/plain');
  });

  it('stops a start with wrong credentials, naming the store and the bucket', async () => {
    await expect(store({ secretAccessKey: 'not-the-secret-0123456789' }).ensureBucket()).rejects.toThrow(S3StoreError);
    await expect(store({ secretAccessKey: 'not-the-secret-0123456789' }).ensureBucket()).rejects.toThrow(
      /bucket 'outputs'.*HTTP 403/,
    );
  });

  it.each(['../secret.txt', '/etc/passwd', 'gen_abc//output.png', '.meta/x', ''])('refuses the key %j', async (bad) => {
    const s = store();
    await expect(s.put(bad, Buffer.from('x'), 'text/plain')).rejects.toBeInstanceOf(InvalidStorageKeyError);
    await expect(s.signedUrl(bad)).rejects.toBeInstanceOf(InvalidStorageKeyError);
  });

  it('serves nothing under the API (its files are fetched from the bucket)', async () => {
    expect(await store().open('gen_s3one/output.png', '9999999999', 'a'.repeat(64))).toBeUndefined();
  });
});
