/**
 * A provider worker killed while many upstream videos wait loses none of them: the
 * waits live in Temporal and PostgreSQL, not in the worker. The provider worker runs as its own
 * process (runtime/worker-process.ts, WORKER_ROLE=provider, as docker-compose runs it); it submits
 * the videos and parks their waits, is killed with SIGKILL, the upstream's webhooks complete the
 * waits while no provider worker is up, and a new one collects every video: each submitted once,
 * each charged once.
 *
 * The issue asks for 100 videos; VIDEOS is that, which keeps this file near 30 s on a loaded
 * two-core machine.
 */
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { providerTaskQueueOf } from '../../../../core/workflow-contract';
import { freePort } from '../../../../runtime/process';
import { ADMIN_TOKEN, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { createProcessGroup, minimalEnv, waitForWorkers } from '../../../support/app-processes';
import type { AppProcess } from '../../../support/app-processes';
import { startQueueVideoUpstream } from '../../../support/upstream-servers';

const VIDEOS = 100;
const STARTUP_MS = 60_000;

let h: Harness;
let fal: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let connection: Connection;
const group = createProcessGroup();
let env: Record<string, string>;

beforeAll(async () => {
  fal = await startQueueVideoUpstream();
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const upstreams = {
    upstreams: [
      {
        name: 'fal',
        protocol: 'queue-video',
        baseUrl: fal.baseUrl,
        timeoutMs: 5_000,
        pollMs: 100,
        slowPollMs: 600_000,
        jwksUrl: fal.jwksUrl,
        models: { kling: 'fal-ai/kling-video' },
      },
    ],
  };
  // Provider runs are left to the worker processes this file starts and kills.
  h = await startHarness({
    workerRole: 'workflows',
    upstreamCallbacks: { upstreams: upstreamsOf(upstreams) },
    videoConcurrency: VIDEOS,
  });
  await h.app.listen({ port, host: '127.0.0.1' });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  env = {
    ...minimalEnv(),
    NODE_ENV: 'production',
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    WORKER_ROLE: 'provider',
    ADMIN_TOKEN,
    // The harness's store: the worker writes the files where the API serves them from.
    URL_SIGNING_SECRET: 'test-signing-secret-0123456789',
    WEBHOOK_SECRET_KEY: 'restart-webhook-key-0123456789',
    DATA_DIR: h.dataDir,
    PUBLIC_BASE_URL: api,
    UPSTREAMS_JSON: JSON.stringify(upstreams),
    LOG_LEVEL: 'warn',
  };
}, STARTUP_MS);

afterAll(async () => {
  await group.killAll();
  await connection?.close();
  await h?.close();
  await fal?.close();
});

/** The upstreams as the API's config parses them (the worker process parses the same JSON itself). */
function upstreamsOf(json: { upstreams: Record<string, unknown>[] }) {
  return json.upstreams.map((u) => ({
    ...u,
    jwksUrl: String(u.jwksUrl),
    protocol: 'queue-video' as const,
    name: String(u.name),
  }));
}

async function providerWorker(label: string): Promise<AppProcess> {
  const worker = group.start(label, 'runtime/worker-process.ts', env);
  await waitForWorkers(group, connection, providerTaskQueueOf(h.taskQueue), [worker], STARTUP_MS, true);
  return worker;
}

describe('a provider worker killed while upstream videos wait', () => {
  it(`loses none of ${VIDEOS}: the webhooks complete the waits with no worker up, and a new worker collects each once`, async () => {
    await group.explained('the restart', async () => {
      const first = await providerWorker('provider 1');
      const { key } = await h.account({ credits: VIDEOS * 50, scopes: ['video'] });
      const ids = await Promise.all(
        Array.from({ length: VIDEOS }, async (_, i) => {
          const res = await h.call('POST', '/api/v1/generate', {
            key,
            body: { kind: 'video', model: 'kling', prompt: `shot ${i} up:ms=600000`, seconds: 5 },
          });
          expect([200, 202], res.body).toContain(res.statusCode);
          return res.json<{ id: string }>().id;
        }),
      );
      // Every video submitted upstream and its wait parked: nothing of them runs in the worker.
      const jobs = await eventually(
        async () => {
          const r = await h.pool.query<{ job_id: string }>(
            'SELECT job_id FROM upstream_jobs WHERE task_token IS NOT NULL',
          );
          return r.rows.length === VIDEOS ? r.rows.map((row) => row.job_id) : undefined;
        },
        60_000,
        200,
      );
      first.proc.kill('SIGKILL');
      await first.exited;
      // Killed on purpose: no longer one whose exit means the test failed.
      group.children.splice(group.children.indexOf(first), 1);

      // The upstream finishes them all while no provider worker is up; its webhooks still land.
      for (const id of jobs) fal.endJob(id);
      await eventually(async () => (fal.webhooks.length === VIDEOS ? true : undefined), 30_000);
      expect(fal.webhooks.every((w) => w.status === 200)).toBe(true);

      await providerWorker('provider 2');
      const done = await eventually(
        async () => {
          const r = await h.pool.query<{ status: string; n: number }>(
            'SELECT status, count(*)::int AS n FROM generations WHERE id = ANY($1) GROUP BY status',
            [ids],
          );
          const by = Object.fromEntries(r.rows.map((row) => [row.status, row.n]));
          return (by.succeeded ?? 0) + (by.failed ?? 0) === VIDEOS ? by : undefined;
        },
        60_000,
        250,
      );
      expect(done).toEqual({ succeeded: VIDEOS });
      expect(fal.submits()).toBe(VIDEOS);
      const ledger = await h.pool.query<{ entry: string; n: number }>(
        'SELECT entry, count(*)::int AS n FROM ledger_entries WHERE generation_id = ANY($1) GROUP BY entry',
        [ids],
      );
      expect(Object.fromEntries(ledger.rows.map((r) => [r.entry, r.n]))).toEqual({ hold: VIDEOS, charge: VIDEOS });
    });
  }, 180_000);
});
