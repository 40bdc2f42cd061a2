// Several API instances and a worker that share nothing but their services: two API processes
// and one worker process (what the compose containers run), each with its own DATA_DIR, all
// configured only through the environment with a real redis-server (REDIS_URL) and a real MinIO
// (S3_*). The plan's rate limit holds across the instances, and a file the worker made is served
// by the bucket to whoever reads the generation from either instance.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../runtime/process';
import { createProcessGroup, http, minimalEnv, waitForHealth, waitForWorkers } from '../../support/app-processes';
import { createDatabase, databaseUrlFor, dropDatabase } from '../../support/harness';
import { startMinio } from '../../support/minio-server';
import type { MinioServer } from '../../support/minio-server';
import { startRedis } from '../../support/redis-server';
import type { RedisServer } from '../../support/redis-server';

const ADMIN_TOKEN = 'shared-state-admin-token-0123456789';
const BUCKET = 'gensvc-outputs';
const STARTUP_MS = 90_000; // the worker bundles workflows/ with webpack as it starts
const STOP_MS = 15_000;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const group = createProcessGroup();
const explained = <T>(work: () => Promise<T>) => group.explained('shared-state test', work);

const name = `t_shared_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const taskQueue = `q-${name}`;
const dataRoot = join(inject('testDataDir'), name);
let redis: RedisServer | undefined;
let minio: MinioServer | undefined;
let connection: Connection | undefined;
let databaseCreated = false;
let bases: [string, string];
let publicEndpoint: string;

interface Generation {
  id: string;
  status: string;
  outputUrl: string;
}

beforeAll(
  async () => {
    await explained(async () => {
      [redis, minio] = await Promise.all([startRedis(join(dataRoot, 'redis')), startMinio(join(dataRoot, 'minio'))]);
      await createDatabase(name);
      databaseCreated = true;
      // Clients reach the store by another name than the services do, as in docker-compose.yml.
      publicEndpoint = minio.endpoint.replace('127.0.0.1', 'localhost');
      const shared: Record<string, string> = {
        ...minimalEnv(),
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        DATABASE_URL: databaseUrlFor(name),
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: taskQueue,
        ADMIN_TOKEN,
        // No URL_SIGNING_SECRET: with the outputs in a bucket, production does not need one.
        WEBHOOK_SECRET_KEY: 'shared-state-webhook-key-0123456789',
        REDIS_URL: redis.url,
        S3_ENDPOINT: minio.endpoint,
        S3_PUBLIC_ENDPOINT: publicEndpoint,
        S3_BUCKET: BUCKET,
        S3_ACCESS_KEY_ID: minio.accessKeyId,
        S3_SECRET_ACCESS_KEY: minio.secretAccessKey,
        LOG_LEVEL: 'warn',
      };
      const ports = [await freePort(), await freePort()] as const;
      bases = [`http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[1]}`];
      // Each process has its own DATA_DIR: nothing reaches another through a disk.
      const worker = group.start('worker', 'runtime/worker-process.ts', {
        ...shared,
        DATA_DIR: join(dataRoot, 'worker'),
      });
      ports.forEach((port, i) => {
        group.start(`api ${i + 1}`, 'runtime/api-process.ts', {
          ...shared,
          PORT: String(port),
          PUBLIC_BASE_URL: bases[i]!,
          DATA_DIR: join(dataRoot, `api-${i + 1}`),
        });
      });
      await Promise.all(bases.map((base) => waitForHealth(group, base, STARTUP_MS)));
      connection = await Connection.connect({ address: inject('temporalAddress') });
      await waitForWorkers(group, connection, taskQueue, [worker], STARTUP_MS);
    });
  },
  STARTUP_MS * 2 + 30_000,
);

afterAll(async () => {
  await group.killAll();
  await connection?.close();
  if (databaseCreated) await dropDatabase(name);
  await Promise.all([redis?.stop(), minio?.stop()]);
});

async function keyFor(plan: string): Promise<string> {
  const account = await http<{ id: string }>(bases[0], 'POST', '/admin/v1/accounts', {
    token: ADMIN_TOKEN,
    body: { plan, credits: 100, chatCap: 0 },
  });
  expect(account.status, JSON.stringify(account.body)).toBe(201);
  const key = await http<{ key: string }>(bases[1], 'POST', `/admin/v1/accounts/${account.body.id}/keys`, {
    token: ADMIN_TOKEN,
    body: { scopes: ['image'] },
  });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  return key.body.key;
}

describe('two API instances and a worker sharing Redis and an S3-compatible store', () => {
  it('holds a free key to 20 requests a minute across both instances: the 21st is refused on either', async () => {
    await explained(async () => {
      const token = await keyFor('free');
      for (let i = 0; i < 20; i++) {
        const res = await http(bases[i % 2]!, 'GET', '/api/credits', { token });
        expect(res.status, `request ${i + 1} on api ${(i % 2) + 1}: ${JSON.stringify(res.body)}`).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBe('20');
        expect(res.headers.get('ratelimit-remaining')).toBe(String(19 - i));
      }
      for (const base of bases) {
        const refused = await http<{ error: { type: string; code: number } }>(base, 'GET', '/api/credits', { token });
        expect(refused.status, base).toBe(429);
        expect(refused.body.error).toMatchObject({ type: 'rate_limit_error', code: 429 });
        expect(refused.headers.get('ratelimit-remaining')).toBe('0');
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(refused.headers.get('ratelimit-reset')).toBe(String(retryAfter));
      }
    });
  });

  it('stores an image the worker made in the bucket and serves it through a fresh presigned URL on each read, from either instance', async () => {
    await explained(async () => {
      const token = await keyFor('samurai');
      const made = await http<{ generation: Generation }>(bases[0], 'POST', '/api/generate', {
        token,
        body: { kind: 'image', model: 'flux', prompt: 'a lighthouse' },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      const first = made.body.generation;
      expect(first.status).toBe('succeeded');
      expect(first.outputUrl.startsWith(`${publicEndpoint}/${BUCKET}/${first.id}/`), first.outputUrl).toBe(true);
      expect(new URL(first.outputUrl).searchParams.get('X-Amz-Expires')).toBe('86400');

      const file = await fetch(first.outputUrl);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('image/png');
      const bytes = Buffer.from(await file.arrayBuffer());
      expect(bytes.subarray(0, 8).equals(PNG_MAGIC), bytes.subarray(0, 8).toString('hex')).toBe(true);

      // Presigned URLs carry their signing second: a later read signs anew.
      await sleep(1_100);
      const again = await http<{ generation: Generation }>(bases[1], 'GET', `/api/generate/${first.id}`, { token });
      expect(again.status).toBe(200);
      expect(again.body.generation.outputUrl).not.toBe(first.outputUrl);
      const refetched = Buffer.from(await (await fetch(again.body.generation.outputUrl)).arrayBuffer());
      expect(refetched.equals(bytes)).toBe(true);

      // With a bucket the API serves no files itself, and nothing was written to any local folder.
      expect((await fetch(`${bases[0]}/files/${first.id}/output.png`)).status).toBe(404);
      for (const dir of ['worker', 'api-1', 'api-2'])
        expect(existsSync(join(dataRoot, dir, 'outputs')), dir).toBe(false);
    });
  });

  it('stops every process on SIGTERM with exit code 0, Redis and S3 clients included', async () => {
    await explained(async () => {
      group.failIfAnyExited();
      for (const c of group.children) c.proc.kill('SIGTERM');
      const exits = await Promise.all(
        group.children.map((c) => Promise.race([c.exited, sleep(STOP_MS).then(() => 'still running' as const)])),
      );
      expect(Object.fromEntries(group.children.map((c, i) => [c.label, exits[i]]))).toEqual({
        worker: { code: 0, signal: null },
        'api 1': { code: 0, signal: null },
        'api 2': { code: 0, signal: null },
      });
    });
  });
});
