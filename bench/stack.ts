import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { loadConfig } from '../core/config';
import { startApiServer } from '../runtime/api-server';
import { startEmbeddedPostgres } from '../runtime/embedded-postgres';
import type { EmbeddedPostgres } from '../runtime/embedded-postgres';
import { freePort, signal } from '../runtime/process';
import { openServices } from '../runtime/services';
import type { Services } from '../runtime/services';
import { ensureTemporalCli } from '../runtime/temporal-cli';
import { startTemporalDevServer } from '../runtime/temporal-dev-server';
import type { TemporalDevServer } from '../runtime/temporal-dev-server';
import { startWorker } from '../runtime/worker-runner';
import { startEntryProcess, startReaper } from '../deploy/processes/children';
import { compiledCommand, ensureBuilt } from '../deploy/processes/compiled';
import { SERVICE_NODE_FLAGS } from '../runtime/node-flags';
import type { ReaperTarget } from '../deploy/processes/children';
import { registerNamespace, setUpTemporalServer, waitForFrontend } from '../deploy/cluster/temporal-server';
import { TEMPORAL_DATABASES } from '../deploy/temporal/server-config';

/**
 * Where the service runs. `process` (default): one child process running `runtime/main.ts` against
 * the bench's PostgreSQL and Temporal — `npm start`'s code, compiled as the image runs it — so that
 * the bench process is only the load generator and the service's CPU and RSS are its own. `in-process`: API and worker inside the
 * bench process. `child`: the API inside the bench process, the worker as `runtime/worker-process.ts`.
 * `processes`: the API (`runtime/api-process.ts`) and the worker (`runtime/worker-process.ts`) as
 * two processes, as a deployment runs them, so that each one's CPU and RSS are its own.
 */
export type WorkerMode = 'process' | 'in-process' | 'child' | 'processes';

/**
 * How a service process runs: `compiled` (default: dist/ from `npm run build`, the workflows
 * prebuilt, as the image runs it) or `source` (the TypeScript through tsx, the workflows bundled
 * as the worker starts, as `npm start` runs it).
 */
export type ServiceForm = 'compiled' | 'source';

/** The command that runs a service entry point (`runtime/main.ts`) in `form`, with Node flags. */
export function serviceCommand(
  form: ServiceForm,
  entry: string,
  nodeArgs: readonly string[] = [],
): [string, ...string[]] {
  return form === 'compiled'
    ? compiledCommand(entry, nodeArgs)
    : [process.execPath, ...SERVICE_NODE_FLAGS, ...nodeArgs, '--import', 'tsx', entry];
}

/**
 * Which Temporal server: `dev`, the CLI's dev server with its SQLite file (as `npm start` runs it);
 * `cluster`, the Temporal server as `npm run cluster` runs it (PostgreSQL persistence and SQL
 * visibility, the same configuration), with its two databases on a PostgreSQL of their own so that
 * their CPU and writes are read apart from ours (production puts them on machines of their own).
 */
export type Topology = 'dev' | 'cluster';

/** The Temporal server the bench runs against. */
export interface TemporalTarget {
  /** What it is, for the report: the dev server (SQLite inside) or the server on PostgreSQL. */
  kind: 'dev server' | 'server on PostgreSQL';
  address: string;
  /** The server's process (the dev server's process group leader). */
  pid: number;
  /** The binary that runs it. */
  binary: string;
}

export interface Stack {
  dataDir: string;
  baseUrl: string;
  adminToken: string;
  /** The service's connections when it runs in the bench process (modes in-process and child). */
  services: Services | undefined;
  /** The bench's own Temporal client (histories for the profile). */
  client: Client;
  /** A separate small pool for the bench's own observations, so they never queue behind the service. */
  observer: pg.Pool;
  topology: Topology;
  temporal: TemporalTarget;
  /** Temporal's own PostgreSQL (topology cluster), with a small pool on it for the bench's readings. */
  temporalDb: { postgres: EmbeddedPostgres; observer: pg.Pool } | undefined;
  postgres: EmbeddedPostgres;
  /** The service's database (`gensvc`). */
  databaseUrl: string;
  workerMode: WorkerMode;
  /** The worker child's pid (modes child and processes), or the service process's (mode process). */
  workerPid: number | undefined;
  /** The API process's pid (mode processes). */
  apiPid: number | undefined;
  /** True when the bench process hosts (part of) the service; false when it is only the load generator. */
  serviceInBench: boolean;
  /** The bare reference (bench/reference-process.ts): its own process on the same Temporal and PostgreSQL; undefined when not asked for. */
  reference: { pid: number; baseUrl: string; taskQueue: string } | undefined;
  /** Tells the safety net (deploy/processes/reaper.mjs) about a process the bench starts beside the stack. */
  watch(name: ReaperTarget, pid: number): void;
  /** How long each start-up step took, in ms. */
  startup: Record<string, number>;
  /** The binary that runs the Temporal server: the CLI (TEMPORAL_CLI, PATH or the cache) or the server's. */
  temporalCli: string;
}

export interface StackHandle {
  /** Resolves once everything is up; rejects (after stopping what did start) on failure. */
  start(): Promise<Stack>;
  /** Stops whatever was started, last first; safe to call at any time and more than once. */
  stop(): Promise<void>;
}

const TASK_QUEUE = 'bench';
const WORKER_ENTRY = 'runtime/worker-process.ts';
const API_ENTRY = 'runtime/api-process.ts';
const SERVICE_ENTRY = 'runtime/main.ts';
const REFERENCE_ENTRY = 'bench/reference-process.ts';
const REFERENCE_TASK_QUEUE = 'bench-bare';

/**
 * The whole service on free ports in a private folder: its own Temporal dev server (headless,
 * SQLite file) and embedded PostgreSQL, migrated, search attributes registered, a worker and the
 * API listening on a real port — the same start-up code `npm start` uses (openServices,
 * startWorker, startApiServer), configured through the one config schema.
 */
export function createStack(options: {
  dataDir: string;
  workerMode: WorkerMode;
  /** `file` (as `npm start` runs it) or `memory` (no SQLite file: shows what persistence costs); dev topology only. */
  temporalDb: 'file' | 'memory';
  /** The dev server (default) or the Temporal server on PostgreSQL. */
  topology?: Topology;
  /** The Temporal server's history shards (topology cluster; default 4). */
  historyShards?: number;
  keepData: boolean;
  log: (line: string) => void;
  /** More settings for the service (e.g. UPSTREAMS_JSON, or a PORT chosen beforehand), through the same config schema. */
  env?: Record<string, string>;
  /** Node flags for the service process (workerMode process), e.g. `--cpu-prof`, which NODE_OPTIONS does not take. */
  nodeArgs?: string[];
  /** How the service's own processes run (default compiled). */
  form?: ServiceForm;
  /** Start the service (default true); without it, only Temporal and PostgreSQL for a scenario that starts its own. */
  service?: boolean;
  /** Start the bare reference process too (default true). */
  reference?: boolean;
}): StackHandle {
  const steps: { name: string; stop: () => Promise<unknown>; limitMs: number }[] = [];
  let stopping: Promise<void> | undefined;

  // Each step is bounded: after an interruption the API may still hold requests that wait for
  // workflows (up to SYNC_WAIT_MS), and the worker may wait for activities that retry against a
  // PostgreSQL that is already gone. What must not be skipped is stopping the child processes.
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const step of steps.reverse()) {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), step.limitMs)));
        try {
          if ((await Promise.race([step.stop(), late])) === 'late')
            options.log(`stopping ${step.name} took over ${step.limitMs} ms; moving on`);
        } catch (err) {
          options.log(`stopping ${step.name} failed: ${(err as Error).message}`);
        } finally {
          clearTimeout(timer);
        }
      }
    })());

  /** If this process exits without stop() (a second Ctrl-C exits at once), take a child process down with it. */
  const killOnExit = (kill: () => void) => {
    process.on('exit', kill);
    return () => process.removeListener('exit', kill);
  };

  const start = async (): Promise<Stack> => {
    const { dataDir, log } = options;
    const startup: Record<string, number> = {};
    const timed = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
      const t = Date.now();
      try {
        return await work();
      } finally {
        startup[name] = Date.now() - t;
      }
    };

    const form = options.form ?? 'compiled';
    const withService = options.service ?? true;
    if ((form === 'compiled' && options.workerMode !== 'in-process') || !withService)
      await timed('build', () => ensureBuilt(log));
    // Default mode (0777 less umask): when we are root PostgreSQL runs as user postgres and must
    // be able to search every parent of its data directory.
    await mkdir(dataDir, { recursive: true });
    const reaper = startReaper(dataDir, options.keepData);
    // Last step of stop(): everything is down, the safety net can go.
    steps.push({ name: 'reaper', stop: async () => reaper.dismiss(), limitMs: 1_000 });
    if (!options.keepData)
      steps.push({ name: 'data folder', stop: () => rm(dataDir, { recursive: true, force: true }), limitMs: 30_000 });

    const topology = options.topology ?? 'dev';
    const started =
      topology === 'cluster'
        ? await startTemporalServerStack({ dataDir, log, timed, reaper, steps }, options.historyShards)
        : await startDevServerStack({ dataDir, log, timed, reaper, steps, killOnExit, temporalDb: options.temporalDb });
    const { temporal, postgres, temporalDb } = started;

    await postgres.ensureDatabase('gensvc');
    const databaseUrl = postgres.urlFor('gensvc');
    const port = await freePort();
    const adminToken = randomBytes(24).toString('base64url');
    const env = {
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: adminToken,
      DATA_DIR: dataDir,
      URL_SIGNING_SECRET: randomBytes(24).toString('base64url'),
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      LOG_LEVEL: 'silent',
      ...options.env,
    };
    const config = loadConfig(env);

    const observer = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    observer.on('error', () => undefined);
    steps.push({ name: 'observer pool', stop: () => observer.end(), limitMs: 5_000 });

    let services: Services | undefined;
    let workerPid: number | undefined;
    let apiPid: number | undefined;
    if (!withService) {
      // The scenario starts the service's processes itself.
    } else if (options.workerMode === 'processes') {
      const childEnv = { ...process.env, ...env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporal.address };
      const worker = await timed(`worker process, ${form} (migrate + start)`, () =>
        startEntryProcess({
          entry: WORKER_ENTRY,
          command: serviceCommand(form, WORKER_ENTRY),
          env: { ...childEnv, DATA_DIR: join(dataDir, 'worker'), LOG_LEVEL: 'error' },
          readyText: 'worker polling',
          onSpawn: (pid) => reaper.tell('worker', pid),
        }),
      );
      steps.push({ name: 'worker process', stop: () => worker.stop(), limitMs: 25_000 });
      const api = await timed(`API process, ${form}`, () =>
        startEntryProcess({
          entry: API_ENTRY,
          command: serviceCommand(form, API_ENTRY),
          env: { ...childEnv, DATA_DIR: join(dataDir, 'api') },
          readyText: 'API listening',
          onSpawn: (pid) => reaper.tell('reference', pid),
        }),
      );
      steps.push({ name: 'API process', stop: () => api.stop(), limitMs: 25_000 });
      workerPid = worker.pid;
      apiPid = api.pid;
    } else if (options.workerMode === 'process') {
      // npm start with DATABASE_URL and TEMPORAL_ADDRESS set: API and workers in one process, which
      // migrates and registers the search attributes as at every start.
      const child = await timed(`service process, ${form} (migrate + start)`, () =>
        startEntryProcess({
          entry: SERVICE_ENTRY,
          command: serviceCommand(form, SERVICE_ENTRY, options.nodeArgs),
          env: {
            ...process.env,
            ...env,
            DATA_DIR: join(dataDir, 'service'),
            DATABASE_URL: databaseUrl,
            TEMPORAL_ADDRESS: temporal.address,
          },
          readyText: 'Generation service is running',
          onSpawn: (pid) => reaper.tell('worker', pid),
        }),
      );
      steps.push({ name: 'service process', stop: () => child.stop(), limitMs: 25_000 });
      workerPid = child.pid;
    } else {
      // Migrates and registers the search attributes, as at every start.
      const s = await timed('connect + migrate', () =>
        openServices(config, { databaseUrl, temporalAddress: temporal.address }),
      );
      services = s;
      steps.push({ name: 'connections', stop: () => s.close(), limitMs: 10_000 });
      if (options.workerMode === 'in-process') {
        const worker = await timed('worker (bundle + start)', () => startWorker(s));
        steps.push({ name: 'worker', stop: () => worker.stop(), limitMs: 15_000 });
      } else {
        const child = await timed(`worker process, ${form} (start)`, () =>
          startEntryProcess({
            entry: WORKER_ENTRY,
            command: serviceCommand(form, WORKER_ENTRY),
            env: {
              ...process.env,
              ...env,
              LOG_LEVEL: 'error',
              DATABASE_URL: databaseUrl,
              TEMPORAL_ADDRESS: temporal.address,
            },
            readyText: 'worker polling',
            onSpawn: (pid) => reaper.tell('worker', pid),
          }),
        );
        steps.push({ name: 'worker process', stop: () => child.stop(), limitMs: 25_000 });
        workerPid = child.pid;
      }
      const app: FastifyInstance = await timed('api', () => startApiServer(s));
      steps.push({ name: 'API', stop: () => app.close(), limitMs: 5_000 });
    }
    const connection = await Connection.connect({ address: temporal.address });
    steps.push({ name: 'bench Temporal connection', stop: () => connection.close(), limitMs: 5_000 });
    const client = new Client({ connection });

    let reference: Stack['reference'];
    if (options.reference ?? true) {
      const referencePort = await freePort();
      const ref = await timed('reference (bundle + start)', () =>
        startEntryProcess({
          entry: REFERENCE_ENTRY,
          env: {
            ...process.env,
            DATABASE_URL: databaseUrl,
            TEMPORAL_ADDRESS: temporal.address,
            PORT: String(referencePort),
            TASK_QUEUE: REFERENCE_TASK_QUEUE,
          },
          readyText: 'reference listening',
          onSpawn: (pid) => reaper.tell('reference', pid),
        }),
      );
      steps.push({ name: 'reference process', stop: () => ref.stop(), limitMs: 20_000 });
      reference = { pid: ref.pid, baseUrl: `http://127.0.0.1:${referencePort}`, taskQueue: REFERENCE_TASK_QUEUE };
    }

    return {
      dataDir,
      baseUrl: `http://127.0.0.1:${config.PORT}`,
      adminToken,
      services,
      client,
      serviceInBench: options.workerMode === 'in-process' || options.workerMode === 'child',
      observer,
      topology,
      temporal,
      temporalDb,
      postgres,
      databaseUrl,
      workerMode: options.workerMode,
      workerPid,
      apiPid,
      reference,
      watch: (name, pid) => reaper.tell(name, pid),
      startup,
      temporalCli: temporal.binary,
    };
  };

  return {
    async start() {
      try {
        return await start();
      } catch (err) {
        await stop();
        throw err;
      }
    },
    stop,
  };
}

type Step = { name: string; stop: () => Promise<unknown>; limitMs: number };
interface StartContext {
  dataDir: string;
  log: (line: string) => void;
  timed: <T>(name: string, work: () => Promise<T>) => Promise<T>;
  reaper: ReturnType<typeof startReaper>;
  /** What stop() undoes, last first. */
  steps: Step[];
}
type Started = {
  temporal: TemporalTarget;
  postgres: EmbeddedPostgres;
  temporalDb: Stack['temporalDb'];
};

/** The dev server (SQLite file, or memory) and our embedded PostgreSQL, side by side. */
async function startDevServerStack(
  c: StartContext & { killOnExit: (kill: () => void) => () => void; temporalDb: 'file' | 'memory' },
): Promise<Started> {
  const cliPath = await c.timed('temporal cli', () => ensureTemporalCli({ env: process.env }));
  c.log('starting Temporal dev server and PostgreSQL…');
  const [temporalResult, postgresResult] = await Promise.allSettled([
    c.timed('temporal server', () =>
      startTemporalDevServer({
        cliPath,
        headless: true,
        ...(c.temporalDb === 'file' ? { dbFile: join(c.dataDir, 'temporal.sqlite') } : {}),
        logFile: join(c.dataDir, 'temporal.log'),
      }),
    ),
    c.timed('postgres', () => startEmbeddedPostgres({ dataDir: join(c.dataDir, 'postgres') })),
  ]);
  if (temporalResult.status === 'fulfilled') {
    // The dev server runs in its own process group, so a terminal's Ctrl-C does not reach it.
    const server: TemporalDevServer = temporalResult.value;
    c.reaper.tell('temporal', server.pid);
    const forget = c.killOnExit(() => signal(-server.pid, 'SIGKILL'));
    c.steps.push({ name: 'Temporal', stop: () => server.stop().finally(forget), limitMs: 30_000 });
  }
  // embedded-postgres asks the postmaster for a fast shutdown on exit by itself.
  if (postgresResult.status === 'fulfilled') {
    c.reaper.tell('postgres', postgresResult.value.pid);
    c.steps.push({ name: 'PostgreSQL', stop: () => postgresResult.value.stop(), limitMs: 45_000 });
  }
  if (temporalResult.status === 'rejected') throw temporalResult.reason;
  if (postgresResult.status === 'rejected') throw postgresResult.reason;
  const server = temporalResult.value;
  return {
    temporal: { kind: 'dev server', address: server.address, pid: server.pid, binary: cliPath },
    postgres: postgresResult.value,
    temporalDb: undefined,
  };
}

/**
 * The Temporal server as `npm run cluster` runs it (deploy/cluster/temporal-server.ts), on a
 * PostgreSQL of its own, and our embedded PostgreSQL beside it.
 */
async function startTemporalServerStack(c: StartContext, historyShards?: number): Promise<Started> {
  c.log('starting PostgreSQL (ours, and one for the Temporal server)…');
  const credentials = { user: 'postgres', password: 'postgres' };
  const [ours, theirs] = await Promise.allSettled([
    c.timed('postgres', () => startEmbeddedPostgres({ dataDir: join(c.dataDir, 'postgres') })),
    c.timed('postgres (Temporal)', () =>
      startEmbeddedPostgres({
        dataDir: join(c.dataDir, 'temporal-postgres'),
        ...credentials,
        logFile: join(c.dataDir, 'temporal-postgres.log'),
      }),
    ),
  ]);
  for (const [name, result] of [
    ['postgres', ours],
    ['postgres-temporal', theirs],
  ] as const) {
    if (result.status !== 'fulfilled') continue;
    c.reaper.tell(name, result.value.pid);
    c.steps.push({ name, stop: () => result.value.stop(), limitMs: 45_000 });
  }
  if (ours.status === 'rejected') throw ours.reason;
  if (theirs.status === 'rejected') throw theirs.reason;
  const db = theirs.value;
  for (const name of [TEMPORAL_DATABASES.default, TEMPORAL_DATABASES.visibility]) await db.ensureDatabase(name);
  const setup = await c.timed('temporal schemas', () =>
    setUpTemporalServer({
      root: join(c.dataDir, 'temporal'),
      pg: { host: '127.0.0.1', port: db.port, ...credentials },
      log: c.log,
      ...(historyShards === undefined ? {} : { historyShards }),
    }),
  );
  c.log('starting the Temporal server (PostgreSQL persistence and SQL visibility)…');
  const server = await c.timed('temporal server', async () => {
    const child = await startEntryProcess({
      entry: 'temporal-server',
      command: setup.command,
      env: setup.env,
      readyText: setup.readyText,
      logFile: join(c.dataDir, 'temporal.log'),
      onSpawn: (pid) => c.reaper.tell('temporal-server', pid),
    });
    // Before PostgreSQL (stop() undoes the steps last first).
    c.steps.push({ name: 'Temporal server', stop: () => child.stop(20_000), limitMs: 25_000 });
    await waitForFrontend(setup.address);
    await registerNamespace(setup.address, 'default');
    return child;
  });
  const observer = new pg.Pool({ connectionString: db.urlFor('postgres'), max: 1 });
  observer.on('error', () => undefined);
  c.steps.push({ name: 'Temporal database observer', stop: () => observer.end(), limitMs: 5_000 });
  return {
    temporal: { kind: 'server on PostgreSQL', address: setup.address, pid: server.pid, binary: setup.binaries.server },
    postgres: ours.value,
    temporalDb: { postgres: db, observer },
  };
}
