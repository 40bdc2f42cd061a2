// The docker-compose topology run as plain processes: one API process, one workflow worker and two
// provider workers (runtime/api-process.ts, runtime/worker-process.ts with WORKER_ROLE=workflows
// and =provider), compiled by `npm run build` as the image runs them, sharing a fresh database, the
// run's Temporal server, a task queue and an output folder. Everything a client does goes over real
// HTTP; provider runs happen in the provider processes and workflow tasks in the workflow worker,
// which starts from the prebuilt workflow bundle; the processes must stop cleanly on SIGTERM.
import { randomUUID } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, isAlive } from '../../../runtime/process';
import { providerTaskQueueOf } from '../../../core/workflow-contract';
import {
  createProcessGroup,
  http as httpAt,
  minimalEnv,
  waitForHealth,
  waitForWorkers,
} from '../../support/app-processes';
import type { AppProcess } from '../../support/app-processes';
import { createDatabase, databaseUrlFor, dropDatabase, eventually } from '../../support/harness';
import { build } from '../../../scripts/build';
import type { BuildStamp } from '../../../scripts/build';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const ADMIN_TOKEN = 'topology-admin-token-0123456789';
const URL_SIGNING_SECRET = 'topology-url-signing-secret-0123456789';
const STARTUP_MS = 90_000;
/** npm run build: esbuild, then the two workflow bundles (webpack) on a busy machine. */
const BUILD_MS = 120_000;
const EventType = proto.temporal.api.enums.v1.EventType;
const STOP_MS = 15_000;

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EBML_MAGIC = Buffer.from([0x1a, 0x45, 0xdf, 0xa3]);

const group = createProcessGroup();
const children = group.children;
const explained = <T>(work: () => Promise<T>) => group.explained('topology test', work);

/** Pids of live processes whose environment carries `marker` (this run's task queue): ours, and anything they started. */
async function processesMarkedWith(marker: string): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((e) => /^\d+$/.test(e)).map(Number);
  const marked = await Promise.all(
    pids.map(async (pid) => {
      if (pid === process.pid) return undefined;
      const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      return environ.split('\0').includes(marker) && isAlive(pid) ? pid : undefined;
    }),
  );
  return marked.filter((pid): pid is number => pid !== undefined);
}

// --- the topology ---

const name = `t_topology_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const taskQueue = `q-${name}`;
const marker = `TEMPORAL_TASK_QUEUE=${taskQueue}`;
/** The activities that ask a provider: an image's runProvider, a video's startProviderRun. */
const PROVIDER_STEPS = new Set(['runProvider', 'startProviderRun']);
let base: string;
let api: AppProcess;
let workers: AppProcess[] = [];
let workflowWorker: AppProcess;
let providers: AppProcess[] = [];
let connection: Connection | undefined;
let databaseCreated = false;
/** This file's own build (npm run build --out=…), which the processes run. */
let dist: string;
let stamp: BuildStamp;

const http = <T>(method: 'GET' | 'POST', path: string, opts: { token?: string; body?: unknown } = {}) =>
  httpAt<T>(base, method, path, opts);

beforeAll(
  async () => {
    await explained(async () => {
      dist = join(inject('testDataDir'), `dist-${name}`);
      stamp = await build({ out: dist, log: () => undefined });
      await createDatabase(name);
      const databaseUrl = databaseUrlFor(name);
      databaseCreated = true;
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      // The environment docker-compose.yml gives the api and worker services, with this run's values.
      const env: Record<string, string> = {
        ...minimalEnv(),
        NODE_ENV: 'production',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: taskQueue,
        ADMIN_TOKEN,
        URL_SIGNING_SECRET,
        WEBHOOK_SECRET_KEY: 'topology-webhook-key-0123456789',
        PUBLIC_BASE_URL: base,
        DATA_DIR: join(inject('testDataDir'), name),
        LOG_LEVEL: 'warn',
      };
      workflowWorker = group.start('worker', 'runtime/worker-process.ts', { ...env, WORKER_ROLE: 'workflows' }, dist);
      providers = [1, 2].map((i) =>
        group.start(`provider ${i}`, 'runtime/worker-process.ts', { ...env, WORKER_ROLE: 'provider' }, dist),
      );
      workers = [workflowWorker, ...providers];
      api = group.start('api', 'runtime/api-process.ts', env, dist);

      await waitForHealth(group, base, STARTUP_MS);
      // /health speaks for the API; the workers are ready once each polls its task queue.
      connection = await Connection.connect({ address: inject('temporalAddress') });
      await waitForWorkers(group, connection, taskQueue, [workflowWorker], STARTUP_MS);
      await waitForWorkers(group, connection, providerTaskQueueOf(taskQueue), providers, STARTUP_MS, true);
    });
  },
  BUILD_MS + 2 * STARTUP_MS + 30_000,
);

afterAll(async () => {
  await group.killAll();
  await connection?.close();
  if (databaseCreated) await dropDatabase(name);
  if (dist) await rm(dist, { recursive: true, force: true });
});

describe('the docker-compose topology as plain processes (one api, a workflow worker, two provider workers)', () => {
  interface Generation {
    id: string;
    status: string;
    outputUrl: string;
    creditsCharged: number;
  }

  it('serves the admin API and generations over HTTP, the workers writing the files the API serves', async () => {
    await explained(async () => {
      expect((await http<{ status: string }>('GET', '/health')).body).toEqual({ status: 'ok' });

      const account = await http<{ id: string }>('POST', '/admin/v1/accounts', {
        token: ADMIN_TOKEN,
        body: { plan: 'samurai', credits: 100, chatCap: 0 },
      });
      expect(account.status).toBe(201);
      const key = await http<{ id: string; key: string }>('POST', `/admin/v1/accounts/${account.body.id}/keys`, {
        token: ADMIN_TOKEN,
        body: { scopes: ['image', 'video', 'chat'] },
      });
      expect(key.status).toBe(201);
      const token = key.body.key;

      const image = await http<{ generation: Generation }>('POST', '/api/generate', {
        token,
        body: { kind: 'image', model: 'flux', prompt: 'a harbour' },
      });
      expect(image.status, JSON.stringify(image.body)).toBe(200);
      expect(image.body.generation).toMatchObject({ status: 'succeeded', creditsCharged: 3 });

      const submitted = await http<{ generation: Generation }>('POST', '/api/generate', {
        token,
        body: { kind: 'video', model: 'kling', prompt: 'sim:delay=500 waves' },
      });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
      const videoId = submitted.body.generation.id;
      const video = await eventually(
        async () => {
          const res = await http<{ generation: Generation }>('GET', `/api/generate/${videoId}`, { token });
          expect(res.status).toBe(200);
          return ['succeeded', 'failed'].includes(res.body.generation.status) ? res.body.generation : undefined;
        },
        60_000,
        200,
      );
      expect(video).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });

      for (const [g, magic] of [
        [image.body.generation, PNG_MAGIC],
        [video, EBML_MAGIC],
      ] as const) {
        expect(g.outputUrl.startsWith(`${base}/`), g.outputUrl).toBe(true);
        const file = await fetch(g.outputUrl);
        expect(file.status).toBe(200);
        const bytes = Buffer.from(await file.arrayBuffer());
        expect(
          bytes.subarray(0, magic.length).equals(magic),
          `${g.outputUrl} starts with ${bytes.subarray(0, 8).toString('hex')}`,
        ).toBe(true);
      }

      const credits = await http<{ balance: number; holdsActive: number }>('GET', '/api/credits', { token });
      expect(credits.status).toBe(200);
      expect(credits.body).toMatchObject({ balance: 54.5, holdsActive: 0 });

      // Who did what, from the workflow histories: every workflow task in the workflow worker, every
      // provider run in a provider worker (identities are `<pid>@<host>`).
      const client = new Client({ connection: connection! });
      const pidOf = (identity: string | null | undefined) => Number((identity ?? '').split('@')[0]);
      for (const id of [image.body.generation.id, videoId]) {
        const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
        const scheduled = new Map(
          events
            .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
            .map((e) => [Number(e.eventId), e.activityTaskScheduledEventAttributes]),
        );
        // A video's provider step is startProviderRun (the simulator answers in that one call).
        const providerRuns = events
          .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
          .filter((e) =>
            PROVIDER_STEPS.has(
              scheduled.get(Number(e.activityTaskStartedEventAttributes?.scheduledEventId))?.activityType?.name ?? '',
            ),
          );
        expect(providerRuns.length, id).toBe(1);
        expect(
          providers.map((p) => p.pid),
          id,
        ).toContain(pidOf(providerRuns[0]!.activityTaskStartedEventAttributes?.identity));
        const workflowTasks = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
        expect(new Set(workflowTasks.map((e) => pidOf(e.workflowTaskStartedEventAttributes?.identity))), id).toEqual(
          new Set([workflowWorker.pid]),
        );
      }
    });
  });

  it('runs the compiled build: workflows from the prebuilt bundle, the dashboard and migrations from dist/, no dev dependency', async () => {
    await explained(async () => {
      expect(workflowWorker.output.toString()).toContain(`workflows from ${join(dist, 'workflow-bundle.js')}`);
      // Migrations ran (the API applies dist/db/migrations/ at start: the accounts above exist), and
      // the dashboard's files are served from dist/api/dashboard/public/.
      const app = await fetch(`${base}/dashboard/assets/app.js`);
      expect(app.status).toBe(200);
      expect(await app.text()).toBe(await readFile(join(ROOT, 'api/dashboard/public/app.js'), 'utf8'));
      // What the compiled files import is installed by npm ci --omit=dev, as in the image.
      const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
        devDependencies: Record<string, string>;
      };
      expect(stamp.packages).toContain('fastify');
      expect(stamp.packages.filter((p) => p in pkg.devDependencies)).toEqual([]);
      for (const tool of ['typescript', 'tsx', 'esbuild', 'webpack']) expect(stamp.packages).not.toContain(tool);
    });
  });

  it('stops every process on SIGTERM with exit code 0 and leaves nothing running', async () => {
    await explained(async () => {
      group.failIfAnyExited();
      expect(await processesMarkedWith(marker)).toEqual(
        expect.arrayContaining([api.pid, ...workers.map((w) => w.pid)]),
      );

      for (const c of children) c.proc.kill('SIGTERM');
      const exits = await Promise.all(
        children.map((c) => Promise.race([c.exited, sleep(STOP_MS).then(() => 'still running' as const)])),
      );
      expect(Object.fromEntries(children.map((c, i) => [c.label, exits[i]]))).toEqual({
        api: { code: 0, signal: null },
        worker: { code: 0, signal: null },
        'provider 1': { code: 0, signal: null },
        'provider 2': { code: 0, signal: null },
      });
      expect(children.filter((c) => isAlive(c.pid)).map((c) => c.label)).toEqual([]);
      expect(await processesMarkedWith(marker)).toEqual([]);
    });
  });
});
