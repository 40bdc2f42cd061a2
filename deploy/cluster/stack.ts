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
import { serviceEnvironment } from '../processes/stack';
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
  const state: ClusterState = {};
  const stop = (): Promise<void> => (state.stopping ??= stopCluster(state, settings.log));
  return { start: () => startCluster(settings, state, stop), stop };
}

/** What has started so far, for the stop: it may come at any moment of the start. */
interface ClusterState {
  postgres?: EmbeddedPostgres;
  supervisor?: Supervisor;
  reaper?: ReturnType<typeof startReaper>;
  stopping?: Promise<void>;
}

/** The balancer first (no new requests), then the service processes (they drain), then what they depend on. */
const STOP_LAYERS: readonly ((name: string) => boolean)[] = [
  (n) => n === 'haproxy',
  (n) => /^(api|worker|provider)-/.test(n),
  (n) => n === 'temporal-ui' || n === 'redis',
  (n) => n === 'temporal',
];

async function stopCluster(state: ClusterState, log: (line: string) => void): Promise<void> {
  const bounded = boundedStop(log);
  for (const layer of STOP_LAYERS) {
    // Read anew for each layer: a stop that comes early in the start may see the supervisor appear.
    const { supervisor } = state;
    const names = (supervisor?.names() ?? []).filter(layer);
    await Promise.all(names.map((name) => bounded(name, supervisor!.current(name)?.stop(20_000), 25_000)));
  }
  await bounded('PostgreSQL', state.postgres?.stop(), 15_000);
  state.reaper?.dismiss();
}

/** The ports the cluster listens on, all free ones but those the settings name. */
interface ClusterPorts {
  postgres: number;
  balancer: number;
  ui: number;
  redis: number;
  apis: number[];
}

async function startCluster(
  settings: ClusterSettings,
  state: ClusterState,
  stop: () => Promise<void>,
): Promise<ClusterStack> {
  const { dataDir, log } = settings;
  const sv = await superviseCluster(settings, state);
  // The API and the workers run compiled, as the image runs them.
  await ensureBuilt(log);
  const ports: ClusterPorts = {
    postgres: await freePort(),
    balancer: settings.port ?? (await freePort()),
    ui: settings.uiPort ?? (await freePort()),
    redis: await freePort(),
    apis: await Promise.all(Array.from({ length: CLUSTER_TOPOLOGY.api }, () => freePort())),
  };
  const postgres = await startClusterPostgres(settings, state, ports.postgres);
  const temporal = await startTemporal(sv, settings, postgres.target);
  await startUiAndRedis(sv, dataDir, temporal, ports, log);

  const baseUrl = `http://127.0.0.1:${ports.balancer}`;
  const adminToken = randomBytes(24).toString('base64url');
  const { databaseUrl } = postgres;
  const env = serviceEnvironment(
    { baseUrl, dataDir, databaseUrl, temporalAddress: temporal.address, taskQueue: TASK_QUEUE, adminToken },
    { TEMPORAL_NAMESPACE: NAMESPACE, REDIS_URL: `redis://127.0.0.1:${ports.redis}`, ...settings.serviceEnv },
  );
  const specs = serviceSpecs(env, ports.apis);
  await startServiceProcesses(sv, specs, log);
  await startBalancer(sv, dataDir, ports);
  await waitForBalancer(baseUrl);

  const pidOf = (name: string) => sv.current(name)!.pid;
  const relaunch = (spec: ServiceSpec) => async () => (await sv.launch(spec)).pid;
  return {
    temporalKind: 'Temporal server',
    baseUrl,
    adminToken,
    databaseUrl,
    dataDir,
    uiUrl: `http://127.0.0.1:${ports.ui}`,
    temporalAddress: temporal.address,
    pids: () => ({ api: pidOf('api-1'), worker: pidOf('worker-1') }),
    processes: () =>
      Object.fromEntries<number>([
        ['postgres', state.postgres!.pid],
        ...sv.names().map((n): [string, number] => [n, pidOf(n)]),
      ]),
    killWorker: () => sv.kill('worker-1'),
    startWorker: relaunch(specs.worker('workflows', 1)),
    killApi: () => sv.kill('api-2'),
    startApi: relaunch(specs.api(2)),
    killProvider: () => sv.kill('provider-1'),
    startProvider: relaunch(specs.worker('provider', 1)),
    stopPostgres: () => state.postgres!.stop(),
    startPostgres: postgres.restart,
    stopTemporal: () => sv.stop('temporal', 15_000),
    startTemporal: temporal.start,
    upgradeTemporal: temporal.upgrade,
    stop,
  };
}

/** The folder, the reaper of what a killed run leaves behind, and the supervisor of the processes. */
async function superviseCluster(settings: ClusterSettings, state: ClusterState): Promise<Supervisor> {
  const { dataDir } = settings;
  await mkdir(dataDir, { recursive: true });
  // Every child process adds an exit hook (deploy/processes/children.ts): a dozen of them is the design.
  process.setMaxListeners(Math.max(process.getMaxListeners(), 40));
  state.reaper = startReaper(dataDir, true);
  state.supervisor = createSupervisor({
    dataDir,
    reaper: state.reaper,
    stopping: () => state.stopping !== undefined,
    onStartFailure: settings.onStartFailure,
    onUnexpectedExit: settings.onUnexpectedExit,
  });
  return state.supervisor;
}

/** PostgreSQL with the service's database and Temporal's two; `restart` starts it again on the same data. */
async function startClusterPostgres(
  settings: ClusterSettings,
  state: ClusterState,
  port: number,
): Promise<{ target: PostgresTarget; databaseUrl: string; restart: () => Promise<void> }> {
  const { dataDir, log } = settings;
  const start = () =>
    startEmbeddedPostgres({
      dataDir: join(dataDir, 'postgres'),
      port,
      ...PG,
      logFile: join(dataDir, 'postgres.log'),
      onSpawn: (pid) => state.reaper?.tell('postgres', pid),
      readyTimeoutMs: 120_000,
    });
  log('starting PostgreSQL…');
  const postgres = (state.postgres = await start());
  for (const db of ['gensvc', TEMPORAL_DATABASES.default, TEMPORAL_DATABASES.visibility])
    await postgres.ensureDatabase(db);
  return {
    target: { host: '127.0.0.1', port, ...PG },
    databaseUrl: postgres.urlFor('gensvc'),
    restart: async () => {
      state.postgres = await start();
    },
  };
}

interface ClusterTemporal {
  address: string;
  uiBinary: string;
  /** Starts the server again on its configuration and databases, and waits for its frontend. */
  start: () => Promise<void>;
  upgrade: ClusterStack['upgradeTemporal'];
}

/** The Temporal server on PostgreSQL persistence and visibility, with the namespace the services use. */
async function startTemporal(sv: Supervisor, settings: ClusterSettings, pg: PostgresTarget): Promise<ClusterTemporal> {
  const root = join(settings.dataDir, 'temporal');
  const temporal = await setUpTemporalServer({
    root,
    pg,
    log: settings.log,
    ...(settings.temporalBinaries ? { binaries: settings.temporalBinaries } : {}),
  });
  let spec: ServiceSpec = {
    name: 'temporal',
    entry: 'temporal-server',
    command: temporal.command,
    env: temporal.env,
    readyText: temporal.readyText,
  };
  const start = async () => {
    await sv.launch(spec);
    await waitForFrontend(temporal.address);
  };
  settings.log('starting the Temporal server (PostgreSQL persistence and visibility)…');
  await start();
  await registerNamespace(temporal.address, NAMESPACE);
  return {
    address: temporal.address,
    uiBinary: temporal.binaries.ui,
    start,
    // In place: stopped, both schemas brought forward by the new schema tool, the new binary started.
    upgrade: async (to) => {
      await sv.stop('temporal', 15_000);
      await applySchemas(to.sqlTool, pg);
      spec = { ...spec, command: serverCommand(to.server, root) };
      await start();
    },
  };
}

async function startUiAndRedis(
  sv: Supervisor,
  dataDir: string,
  temporal: ClusterTemporal,
  ports: ClusterPorts,
  log: (line: string) => void,
): Promise<void> {
  const uiRoot = join(dataDir, 'temporal-ui');
  await mkdir(join(uiRoot, 'config'), { recursive: true });
  await writeFile(
    join(uiRoot, 'config', 'cluster.yaml'),
    JSON.stringify(temporalUiConfig(temporal.address, ports.ui), null, 2),
  );
  log('starting the Temporal UI and Redis…');
  await Promise.all([
    sv.launch({
      name: 'temporal-ui',
      entry: 'temporal-ui-server',
      command: [temporal.uiBinary, '--root', uiRoot, '--config', 'config', '--env', 'cluster', 'start'],
      env: { PATH: process.env.PATH ?? '' },
      readyText: 'http server started',
    }),
    sv.launch({
      name: 'redis',
      entry: 'redis-server',
      command: [
        'redis-server',
        '--port',
        String(ports.redis),
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
}

/** How each API process and worker starts: compiled, on the run's environment. */
function serviceSpecs(env: NodeJS.ProcessEnv, apiPorts: readonly number[]) {
  return {
    api: (i: number): ServiceSpec => ({
      name: `api-${i}`,
      entry: 'runtime/api-process.ts',
      command: compiledCommand('runtime/api-process.ts'),
      env: { ...env, PORT: String(apiPorts[i - 1]) },
      readyText: 'API listening',
    }),
    worker: (role: 'workflows' | 'provider', i: number): ServiceSpec => ({
      name: `${role === 'workflows' ? 'worker' : 'provider'}-${i}`,
      entry: 'runtime/worker-process.ts',
      command: compiledCommand('runtime/worker-process.ts'),
      env: { ...env, WORKER_ROLE: role },
      readyText: 'worker polling',
    }),
  };
}

async function startServiceProcesses(
  sv: Supervisor,
  specs: ReturnType<typeof serviceSpecs>,
  log: (line: string) => void,
): Promise<void> {
  const { api, workflowWorkers, providerWorkers } = CLUSTER_TOPOLOGY;
  log(
    `starting ${api} API processes, ${workflowWorkers} workflow workers and ${providerWorkers} provider workers (compiled, workflows prebuilt)…`,
  );
  // One at first: the first API migrates the database, the first worker creates the reconciler's schedule.
  await Promise.all([sv.launch(specs.api(1)), sv.launch(specs.worker('workflows', 1))]);
  const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  const rest = await Promise.allSettled([
    ...range(api)
      .slice(1)
      .map((i) => sv.launch(specs.api(i))),
    ...range(workflowWorkers)
      .slice(1)
      .map((i) => sv.launch(specs.worker('workflows', i))),
    ...range(providerWorkers).map((i) => sv.launch(specs.worker('provider', i))),
  ]);
  for (const result of rest) if (result.status === 'rejected') throw result.reason;
}

/** HAProxy before the API processes: the one URL clients use. */
async function startBalancer(sv: Supervisor, dataDir: string, ports: ClusterPorts): Promise<void> {
  const haproxyFile = join(dataDir, 'haproxy.cfg');
  await writeFile(
    haproxyFile,
    haproxyConfig({
      bind: `127.0.0.1:${ports.balancer}`,
      servers: ports.apis.map((p, i) => ({ name: `api-${i + 1}`, address: `127.0.0.1:${p}` })),
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
