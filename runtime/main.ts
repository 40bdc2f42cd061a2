import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ConfigError, loadConfig, privateNetworkWarning } from '../core/config';
import { API_DRAIN_MS, startApiServer, stopApiServer } from './api-server';
import { startEmbeddedPostgres } from './embedded-postgres';
import { acquireInstanceLock, InstanceLockedError } from './instance-lock';
import type { InstanceLock } from './instance-lock';
import { createShutdown, STOP_DEADLINE_MS } from './lifecycle';
import { isAlive, signal, waitForExit } from './process';
import { openServices } from './services';
import { describeTemporalCli, ensureTemporalCli } from './temporal-cli';
import { startTemporalDevServer } from './temporal-dev-server';
import { SHUTDOWN_FORCE_MS } from './worker';
import { startWorker } from './worker-runner';

/**
 * `npm start`: the whole service on one machine. PostgreSQL and Temporal are embedded unless
 * DATABASE_URL / TEMPORAL_ADDRESS point elsewhere; the worker and the API run in this process.
 *
 * Stopping (docs/decisions/0059-stopping.md): the API stops taking requests, the worker drains,
 * then the Temporal dev server and PostgreSQL stop, each step bounded, the whole within ~15 s.
 */
const shutdown = createShutdown({ deadlineMs: STOP_DEADLINE_MS });
/** The servers this process started (a negative pid is a process group), and how to stop them. */
const servers: { pid: number; stop: NodeJS.Signals }[] = [];
let lock: InstanceLock | undefined;

/**
 * Exits, but only once every server this process started is gone: a stop that came while they
 * were still starting (before their steps were added), or one cut short, may have missed some.
 */
async function exit(code: number): Promise<never> {
  for (const server of servers) if (isAlive(server.pid)) signal(server.pid, server.stop);
  const gone = await Promise.all(servers.map((server) => waitForExit(server.pid, 5_000)));
  // Left in place otherwise, so that the next start stops what still runs.
  if (gone.every(Boolean)) await lock?.release().catch(() => undefined);
  process.exit(code);
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dataDir = resolve(config.DATA_DIR);
  shutdown.onSignals((code) => void exit(code));
  shutdown.followParent((code) => void exit(code));
  const say = (line: string) => console.log(line);

  // Default mode (0777 less umask): when we are root PostgreSQL runs as user postgres and must be
  // able to search its parent.
  await mkdir(dataDir, { recursive: true });
  // Embedded servers are what two instances would fight over and what a killed one leaves behind.
  const embedded = !config.DATABASE_URL || !config.TEMPORAL_ADDRESS;
  const instance = embedded ? (lock = await acquireInstanceLock(dataDir, say)) : undefined;

  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    say(`Starting embedded PostgreSQL (data in ${join(dataDir, 'postgres')})…`);
    const pg = await startEmbeddedPostgres({
      dataDir: join(dataDir, 'postgres'),
      port: config.EMBEDDED_PG_PORT,
      logFile: join(dataDir, 'postgres.log'),
      onSpawn: async (pid) => {
        servers.push({ pid, stop: 'SIGINT' });
        await instance?.recordServer({
          name: 'PostgreSQL',
          pid,
          group: false,
          stopSignals: [
            ['SIGINT', 5_000],
            ['SIGQUIT', 2_000],
            ['SIGKILL', 2_000],
          ],
        });
      },
    });
    shutdown.add('PostgreSQL', () => pg.stop(), { timeoutMs: 9_000, kill: () => pg.kill() });
    await pg.ensureDatabase('gensvc');
    databaseUrl = pg.urlFor('gensvc');
  }

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi: string | undefined;
  if (!temporalAddress) {
    const cliPath = await ensureTemporalCli({ env: process.env });
    say(`Starting the Temporal dev server (${describeTemporalCli(cliPath)})…`);
    const server = await startTemporalDevServer({
      cliPath,
      dbFile: join(dataDir, 'temporal.sqlite'),
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      logFile: join(dataDir, 'temporal.log'),
      onSpawn: async (pid) => {
        servers.push({ pid: -pid, stop: 'SIGTERM' });
        await instance?.recordServer({
          name: 'Temporal dev server',
          pid,
          group: true,
          stopSignals: [
            ['SIGTERM', 3_000],
            ['SIGKILL', 2_000],
          ],
        });
      },
    });
    shutdown.add('Temporal', () => server.stop(), { timeoutMs: 6_000, kill: () => server.kill() });
    temporalAddress = server.address;
    temporalUi = server.uiUrl;
  }

  const warning = privateNetworkWarning(config);
  if (warning) say(warning);
  say('Starting the worker and the API…');
  const services = await openServices(config, { databaseUrl, temporalAddress });
  shutdown.add('connections', () => services.close(), { timeoutMs: 2_000 });
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop(), { timeoutMs: SHUTDOWN_FORCE_MS + 1_000 });
  const app = await startApiServer(services);
  shutdown.add('API', () => stopApiServer(app), { timeoutMs: API_DRAIN_MS + 1_000 });

  const api = services.publicBaseUrl;
  const token = services.adminToken.value;
  say(`
Generation service is running.
  API          ${api}   (health: ${api}/health)
  Temporal UI  ${temporalUi ?? `(external Temporal at ${temporalAddress})`}
  Admin token  ${services.adminToken.generated ? `${token}  (generated, kept in ${join(dataDir, 'secrets')})` : '(from ADMIN_TOKEN)'}

Get an API key:
  export ADMIN_TOKEN=${services.adminToken.generated ? token : '<your ADMIN_TOKEN>'} GENSVC_URL=${api}
  npx gensvc account create --plan samurai --credits 500      # prints the account id
  npx gensvc key create <account id> --scopes image,video,chat  # prints the key once

Press Ctrl-C to stop.`);
}

main().catch(async (err: unknown) => {
  // A stop that comes during start-up ends what is starting; its failure is no news then.
  if (!shutdown.stopping)
    console.error(err instanceof ConfigError || err instanceof InstanceLockedError ? err.message : err);
  // Whatever did start (PostgreSQL, the Temporal dev server) must not outlive a failed start.
  await shutdown.stop();
  await exit(1);
});
