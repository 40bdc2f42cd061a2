// The production topology as plain processes on free ports in one folder (`npm run cluster`,
// `npm run faults -- --topology=cluster`): PostgreSQL, the Temporal server on PostgreSQL
// persistence and SQL visibility (not the dev server), the Temporal UI server pointed at it,
// Redis, API processes behind HAProxy, workflow workers (each also runs the webhook relay) and
// provider workers. docker-compose.yml describes the same topology (test/unit/deploy/compose.test.ts).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startReaper } from '../processes/children';
import { compiledCommand, ensureBuilt } from '../processes/compiled';
import type { ReaperTarget } from '../processes/children';
import { startEmbeddedPostgres } from '../../runtime/embedded-postgres';
import type { EmbeddedPostgres } from '../../runtime/embedded-postgres';
import { freePort } from '../../runtime/process';
import { TEMPORAL_DATABASES, temporalUiConfig } from '../temporal/server-config';
import type { PostgresTarget } from '../temporal/server-config';
import { haproxyConfig } from './haproxy';
import {
  applySchemas,
  registerNamespace,
  serverCommand,
  setUpTemporalServer,
  waitForFrontend,
} from './temporal-server';
import type { TemporalServerBinaries } from '../../scripts/temporal-server';
import type { HaproxySettings } from './haproxy';
import type { ProcessStack, StackSettings } from '../processes/stack';
import { boundedStop, createSupervisor } from '../processes/supervisor';
import type { ServiceSpec, Supervisor } from '../processes/supervisor';

/** How many of each the topology runs; docker-compose.yml's replicas say the same. */
export const CLUSTER_TOPOLOGY = { api: 2, workflowWorkers: 2, providerWorkers: 2 } as const;
/** The compose balancer's settings: deploy/haproxy/haproxy.cfg is haproxyConfig of these. */
export const COMPOSE_HAPROXY: HaproxySettings = {
  bind: '*:3000',
  servers: { template: 'api', count: CLUSTER_TOPOLOGY.api, address: 'api:3000', nameserver: '127.0.0.11:53' },
  errorFile: '/usr/local/etc/haproxy/503.http',
};
const NAMESPACE = 'default';
const TASK_QUEUE = 'generations';
const PG = { user: 'postgres', password: 'postgres' };

export interface ClusterStack extends ProcessStack {
  uiUrl: string;
  temporalAddress: string;
  /** SIGKILLs an API process behind the balancer; `startApi` brings it back. */
  killApi(): Promise<number>;
  startApi(): Promise<number>;
  /** SIGKILLs a provider worker; `startProvider` brings it back. */
  killProvider(): Promise<number>;
  startProvider(): Promise<number>;
  /** The processes the topology runs now, by name. */
  processes(): Record<string, number>;
  /**
   * An in-place upgrade of the Temporal server: stops it, brings both schemas forward with the new
   * version's schema tool, and starts the new binary on the same configuration and databases.
   */
  upgradeTemporal(to: { server: string; sqlTool: string }): Promise<void>;
}

export interface ClusterSettings extends StackSettings {
  /** Host port of the balancer (the one URL clients use); a free one when omitted. */
  port?: number;
  uiPort?: number;
  /** The Temporal server's binaries when not the version scripts/temporal-server.ts builds. */
  temporalBinaries?: TemporalServerBinaries;
}

export function createClusterStack(settings: ClusterSettings): {
  start(): Promise<ClusterStack>;
  stop(): Promise<void>;
} {
  const { dataDir, log } = settings;
  let postgres: EmbeddedPostgres | undefined;
  let supervisor: Supervisor | undefined;
  let reaper: ReturnType<typeof startReaper> | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const bounded = boundedStop(log);
      const running = (names: (name: string) => boolean) =>
        (supervisor?.names() ?? []).filter(names).map((n) => [n, supervisor!.current(n)] as const);
      // The balancer first (no new requests), then the service processes (they drain), then
      // what they depend on.
      const layers: ((name: string) => boolean)[] = [
        (n) => n === 'haproxy',
        (n) => /^(api|worker|provider)-/.test(n),
        (n) => n === 'temporal-ui' || n === 'redis',
        (n) => n === 'temporal',
      ];
      for (const layer of layers) {
        await Promise.all(running(layer).map(([name, child]) => bounded(name, child?.stop(20_000), 25_000)));
      }
      await bounded('PostgreSQL', postgres?.stop(), 15_000);
      reaper?.dismiss();
    })());

  const start = async (): Promise<ClusterStack> => {
    await mkdir(dataDir, { recursive: true });
    // Every child process adds an exit hook (deploy/processes/children.ts): a dozen of them is the design.
    process.setMaxListeners(Math.max(process.getMaxListeners(), 40));
    reaper = startReaper(dataDir, true);
    const tell = (name: ReaperTarget) => (pid: number) => reaper?.tell(name, pid);
    supervisor = createSupervisor({
      dataDir,
      reaper,
      stopping: () => stopping !== undefined,
      onStartFailure: settings.onStartFailure,
      onUnexpectedExit: settings.onUnexpectedExit,
    });
    const sv = supervisor;
    // The API and the workers run compiled, as the image runs them.
    await ensureBuilt(log);

    const port = () => freePort();
    const pgPort = await port();
    const lbPort = settings.port ?? (await port());
    const uiPort = settings.uiPort ?? (await port());
    const redisPort = await port();
    const apiPorts = await Promise.all(Array.from({ length: CLUSTER_TOPOLOGY.api }, () => port()));

    log('starting PostgreSQL…');
    const startPostgres = () =>
      startEmbeddedPostgres({
        dataDir: join(dataDir, 'postgres'),
        port: pgPort,
        ...PG,
        logFile: join(dataDir, 'postgres.log'),
        onSpawn: tell('postgres'),
        readyTimeoutMs: 120_000,
      });
    postgres = await startPostgres();
    const pg: PostgresTarget = { host: '127.0.0.1', port: pgPort, ...PG };
    for (const db of ['gensvc', TEMPORAL_DATABASES.default, TEMPORAL_DATABASES.visibility])
      await postgres.ensureDatabase(db);

    const temporalRoot = join(dataDir, 'temporal');
    const temporal = await setUpTemporalServer({
      root: temporalRoot,
      pg,
      log,
      ...(settings.temporalBinaries ? { binaries: settings.temporalBinaries } : {}),
    });
    const temporalAddress = temporal.address;
    let temporalSpec: ServiceSpec = {
      name: 'temporal',
      entry: 'temporal-server',
      command: temporal.command,
      env: temporal.env,
      readyText: temporal.readyText,
    };
    const startTemporal = async () => {
      await sv.launch(temporalSpec);
      await waitForFrontend(temporalAddress);
    };
    log('starting the Temporal server (PostgreSQL persistence and visibility)…');
    await startTemporal();
    await registerNamespace(temporalAddress, NAMESPACE);

    const uiRoot = join(dataDir, 'temporal-ui');
    await mkdir(join(uiRoot, 'config'), { recursive: true });
    await writeFile(
      join(uiRoot, 'config', 'cluster.yaml'),
      JSON.stringify(temporalUiConfig(temporalAddress, uiPort), null, 2),
    );
    log('starting the Temporal UI and Redis…');
    await Promise.all([
      sv.launch({
        name: 'temporal-ui',
        entry: 'temporal-ui-server',
        command: [temporal.binaries.ui, '--root', uiRoot, '--config', 'config', '--env', 'cluster', 'start'],
        env: { PATH: process.env.PATH ?? '' },
        readyText: 'http server started',
      }),
      sv.launch({
        name: 'redis',
        entry: 'redis-server',
        command: [
          'redis-server',
          '--port',
          String(redisPort),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        env: { PATH: process.env.PATH ?? '' },
        readyText: 'Ready to accept connections',
      }),
    ]);

    const baseUrl = `http://127.0.0.1:${lbPort}`;
    const adminToken = randomBytes(24).toString('base64url');
    const databaseUrl = postgres.urlFor('gensvc');
    // What docker-compose gives the api and worker services, with this run's values; nothing else
    // is inherited, so a DATABASE_URL or S3_BUCKET of the caller's shell cannot leak in.
    const env: NodeJS.ProcessEnv = {
      ...(process.env.PATH ? { PATH: process.env.PATH } : {}),
      ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
      // Development mode lets the API fetch upscale inputs from the fault run's loopback server.
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: baseUrl,
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_NAMESPACE: NAMESPACE,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      ADMIN_TOKEN: adminToken,
      URL_SIGNING_SECRET: randomBytes(24).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(24).toString('base64url'),
      LOG_LEVEL: 'warn',
      ...settings.serviceEnv,
    };
    const apiSpec = (i: number): ServiceSpec => ({
      name: `api-${i}`,
      entry: 'runtime/api-process.ts',
      command: compiledCommand('runtime/api-process.ts'),
      env: { ...env, PORT: String(apiPorts[i - 1]) },
      readyText: 'API listening',
    });
    const workerSpec = (role: 'workflows' | 'provider', i: number): ServiceSpec => ({
      name: `${role === 'workflows' ? 'worker' : 'provider'}-${i}`,
      entry: 'runtime/worker-process.ts',
      command: compiledCommand('runtime/worker-process.ts'),
      env: { ...env, WORKER_ROLE: role },
      readyText: 'worker polling',
    });
    const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

    log(
      `starting ${CLUSTER_TOPOLOGY.api} API processes, ${CLUSTER_TOPOLOGY.workflowWorkers} workflow workers and ${CLUSTER_TOPOLOGY.providerWorkers} provider workers (compiled, workflows prebuilt)…`,
    );
    // One at first: the first API migrates the database, the first worker creates the reconciler's schedule.
    await Promise.all([sv.launch(apiSpec(1)), sv.launch(workerSpec('workflows', 1))]);
    const rest = await Promise.allSettled([
      ...range(CLUSTER_TOPOLOGY.api)
        .slice(1)
        .map((i) => sv.launch(apiSpec(i))),
      ...range(CLUSTER_TOPOLOGY.workflowWorkers)
        .slice(1)
        .map((i) => sv.launch(workerSpec('workflows', i))),
      ...range(CLUSTER_TOPOLOGY.providerWorkers).map((i) => sv.launch(workerSpec('provider', i))),
    ]);
    for (const result of rest) if (result.status === 'rejected') throw result.reason;

    const haproxyFile = join(dataDir, 'haproxy.cfg');
    await writeFile(
      haproxyFile,
      haproxyConfig({
        bind: `127.0.0.1:${lbPort}`,
        servers: apiPorts.map((p, i) => ({ name: `api-${i + 1}`, address: `127.0.0.1:${p}` })),
        errorFile: resolve('deploy/haproxy/503.http'),
      }),
    );
    await sv.launch({
      name: 'haproxy',
      entry: 'haproxy',
      command: ['haproxy', '-f', haproxyFile, '-db', '-V'],
      env: { PATH: process.env.PATH ?? '' },
      readyText: 'as the polling mechanism',
    });
    await waitForBalancer(baseUrl);

    const pidOf = (name: string) => sv.current(name)!.pid;
    const relaunch = (spec: ServiceSpec) => async () => (await sv.launch(spec)).pid;
    return {
      temporalKind: 'Temporal server',
      baseUrl,
      adminToken,
      databaseUrl,
      dataDir,
      uiUrl: `http://127.0.0.1:${uiPort}`,
      temporalAddress,
      pids: () => ({ api: pidOf('api-1'), worker: pidOf('worker-1') }),
      processes: () =>
        Object.fromEntries<number>([
          ['postgres', postgres!.pid],
          ...sv.names().map((n): [string, number] => [n, pidOf(n)]),
        ]),
      killWorker: () => sv.kill('worker-1'),
      startWorker: relaunch(workerSpec('workflows', 1)),
      killApi: () => sv.kill('api-2'),
      startApi: relaunch(apiSpec(2)),
      killProvider: () => sv.kill('provider-1'),
      startProvider: relaunch(workerSpec('provider', 1)),
      stopPostgres: () => postgres!.stop(),
      async startPostgres() {
        postgres = await startPostgres();
      },
      stopTemporal: () => sv.stop('temporal', 15_000),
      startTemporal,
      async upgradeTemporal(to) {
        await sv.stop('temporal', 15_000);
        await applySchemas(to.sqlTool, pg);
        temporalSpec = { ...temporalSpec, command: serverCommand(to.server, temporalRoot) };
        await startTemporal();
      },
      stop,
    };
  };

  return { start, stop };
}

async function waitForBalancer(baseUrl: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`the balancer at ${baseUrl} did not answer /health within ${timeoutMs / 1000} s`);
    await sleep(500);
  }
}
