// A real MinIO server for the S3 output store tests, built by `npm run minio` (.ci/run runs it).
import { mkdir } from 'node:fs/promises';
import { cachedMinioPath, findMinio, MINIO_RELEASE } from '../../scripts/minio';
import { freePort } from '../../runtime/process';
import { start, stopped, waitUntil } from './servers';
import type { TestServer } from './servers';

export interface MinioServer extends TestServer {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** A MinIO server built by `npm run minio` (.ci/run runs it); missing, it fails with that command. */
export async function startMinio(dataDir: string): Promise<MinioServer> {
  const binary = await findMinio();
  if (!binary) {
    throw new Error(
      `MinIO ${MINIO_RELEASE} is not built; run \`npm run minio\` (go install into ${cachedMinioPath()}, a few minutes once; .ci/run does this) or set MINIO_BINARY`,
    );
  }
  await mkdir(dataDir, { recursive: true });
  const port = await freePort();
  const credentials = { accessKeyId: 'gensvc-test', secretAccessKey: 'gensvc-test-secret-0123456789' };
  const env = {
    ...process.env,
    MINIO_ROOT_USER: credentials.accessKeyId,
    MINIO_ROOT_PASSWORD: credentials.secretAccessKey,
    // No web console, no phoning home for updates: it has nowhere to reach here.
    MINIO_BROWSER: 'off',
    MINIO_UPDATE: 'off',
  };
  const s = start('minio', binary, ['server', dataDir, '--address', `127.0.0.1:${port}`, '--quiet'], env);
  const endpoint = `http://127.0.0.1:${port}`;
  await waitUntil(
    'minio',
    s,
    async () => (await fetch(`${endpoint}/minio/health/ready`).catch(() => undefined))?.status === 200,
  );
  return { port, endpoint, ...credentials, stop: () => stopped(s) };
}
