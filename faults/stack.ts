// The service as the compose deployment runs it, but as plain processes on free ports in one
// folder, each reachable on its own so that it can be killed or restarted: an embedded PostgreSQL,
// the Temporal dev server (SQLite file, as `npm start` runs it), the API (runtime/api-process.ts)
// and one worker (runtime/worker-process.ts), both compiled by `npm run build` as the image runs them.
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startReaper } from '../deploy/processes/children';
import { compiledCommand, ensureBuilt } from '../deploy/processes/compiled';
import type { ReaperTarget } from '../deploy/processes/children';
import { startEmbeddedPostgres } from '../runtime/embedded-postgres';
import type { EmbeddedPostgres } from '../runtime/embedded-postgres';
import { freePort } from '../runtime/process';
import { ensureTemporalCli } from '../runtime/temporal-cli';
import { startTemporalDevServer } from '../runtime/temporal-dev-server';
import type { TemporalDevServer } from '../runtime/temporal-dev-server';
import { boundedStop, createSupervisor } from '../deploy/processes/supervisor';
import type { ServiceSpec, Supervisor } from '../deploy/processes/supervisor';
import { serviceEnvironment } from '../deploy/processes/stack';
import type { ProcessStack, Service, StackSettings } from '../deploy/processes/stack';

const TASK_QUEUE = 'faults';

/**
 * Starts the stack. Whatever has started is stopped by `stop()` of the handle, which exists before
 * anything starts so that a Ctrl-C during start-up can use it.
 */
export function createFaultStack(settings: StackSettings): { start(): Promise<ProcessStack>; stop(): Promise<void> } {
  const { dataDir, log } = settings;
  let postgres: EmbeddedPostgres | undefined;
  let temporal: TemporalDevServer | undefined;
  let supervisor: Supervisor | undefined;
  let reaper: ReturnType<typeof startReaper> | undefined;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      const bounded = boundedStop(log);
      await Promise.all([
        bounded('the API', supervisor?.current('api')?.stop(), 20_000),
        bounded('the worker', supervisor?.current('worker')?.stop(), 20_000),
      ]);
      await bounded('Temporal', temporal?.stop(), 15_000);
      await bounded('PostgreSQL', postgres?.stop(), 15_000);
      reaper?.dismiss();
    })());

  const start = async (): Promise<ProcessStack> => {
    // Default mode (0777 less umask): as root PostgreSQL runs as user postgres and must be able to
    // search every parent of its data directory.
    await mkdir(dataDir, { recursive: true });
    // Data is kept for inspection if the harness is killed; a finished run removes it itself.
    reaper = startReaper(dataDir, true);
    const tell = (name: ReaperTarget) => (pid: number) => reaper?.tell(name, pid);
    const cliPath = await ensureTemporalCli({ env: process.env });
    // The API and the worker run compiled, as the image runs them.
    await ensureBuilt(log);
    const [pgPort, temporalPort, apiPort] = [await freePort(), await freePort(), await freePort()];

    const startPostgres = () =>
      startEmbeddedPostgres({
        dataDir: join(dataDir, 'postgres'),
        port: pgPort,
        logFile: join(dataDir, 'postgres.log'),
        onSpawn: tell('postgres'),
        readyTimeoutMs: 120_000,
      });
    const startTemporal = () =>
      startTemporalDevServer({
        cliPath,
        dbFile: join(dataDir, 'temporal.sqlite'),
        port: temporalPort,
        headless: true,
        logFile: join(dataDir, 'temporal.log'),
        onSpawn: tell('temporal'),
        readyTimeoutMs: 120_000,
      });

    log('starting PostgreSQL and the Temporal dev server…');
    const [pgResult, temporalResult] = await Promise.allSettled([startPostgres(), startTemporal()]);
    if (pgResult.status === 'fulfilled') postgres = pgResult.value;
    if (temporalResult.status === 'fulfilled') temporal = temporalResult.value;
    if (pgResult.status === 'rejected') throw pgResult.reason;
    if (temporalResult.status === 'rejected') throw temporalResult.reason;
    await postgres!.ensureDatabase('gensvc');

    const baseUrl = `http://127.0.0.1:${apiPort}`;
    const adminToken = randomBytes(24).toString('base64url');
    const databaseUrl = postgres!.urlFor('gensvc');
    const env = serviceEnvironment(
      { baseUrl, dataDir, databaseUrl, temporalAddress: temporal!.address, taskQueue: TASK_QUEUE, adminToken },
      { PORT: String(apiPort), ...settings.serviceEnv },
    );

    supervisor = createSupervisor({
      dataDir,
      reaper,
      stopping: () => stopping !== undefined,
      onStartFailure: settings.onStartFailure,
      onUnexpectedExit: settings.onUnexpectedExit,
    });
    const specOf = (what: Service): ServiceSpec => ({
      name: what,
      entry: what === 'api' ? 'runtime/api-process.ts' : 'runtime/worker-process.ts',
      command: compiledCommand(what === 'api' ? 'runtime/api-process.ts' : 'runtime/worker-process.ts'),
      env,
      readyText: what === 'api' ? 'API listening' : 'worker polling',
    });
    const launch = async (what: Service): Promise<void> => void (await supervisor!.launch(specOf(what)));

    log('starting the API and the worker (compiled, workflows prebuilt)…');
    const results = await Promise.allSettled([launch('api'), launch('worker')]);
    for (const result of results) if (result.status === 'rejected') throw result.reason;

    return {
      temporalKind: 'Temporal dev server',
      baseUrl,
      adminToken,
      databaseUrl,
      dataDir,
      pids: () => ({ api: supervisor!.current('api')!.pid, worker: supervisor!.current('worker')!.pid }),
      killWorker: () => supervisor!.kill('worker'),
      async startWorker() {
        await launch('worker');
        return supervisor!.current('worker')!.pid;
      },
      stopPostgres: () => postgres!.stop(),
      async startPostgres() {
        postgres = await startPostgres();
      },
      stopTemporal: () => temporal!.stop(),
      async startTemporal() {
        temporal = await startTemporal();
      },
      stop,
    };
  };

  return { start, stop };
}
