import { join, resolve } from 'node:path';
import { ConfigError, loadConfig } from '../core/config';
import { startApiServer } from './api-server';
import { startEmbeddedPostgres } from './embedded-postgres';
import { createShutdown } from './lifecycle';
import { openServices } from './services';
import { ensureTemporalCli } from './temporal-cli';
import { startTemporalDevServer } from './temporal-dev-server';
import { startWorker } from './worker-runner';

/**
 * `npm start`: the whole service on one machine. PostgreSQL and Temporal are embedded unless
 * DATABASE_URL / TEMPORAL_ADDRESS point elsewhere; the worker and the API run in this process.
 */
const shutdown = createShutdown();

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const dataDir = resolve(config.DATA_DIR);
  shutdown.onSignals((code) => process.exit(code));
  shutdown.followParent((code) => process.exit(code));
  const say = (line: string) => console.log(line);

  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    say(`Starting embedded PostgreSQL (data in ${join(dataDir, 'postgres')})…`);
    const pg = await startEmbeddedPostgres({ dataDir: join(dataDir, 'postgres'), port: config.EMBEDDED_PG_PORT });
    shutdown.add('PostgreSQL', () => pg.stop());
    await pg.ensureDatabase('gensvc');
    databaseUrl = pg.urlFor('gensvc');
  }

  let temporalAddress = config.TEMPORAL_ADDRESS;
  let temporalUi: string | undefined;
  if (!temporalAddress) {
    const cliPath = await ensureTemporalCli({ env: process.env });
    say(`Starting the Temporal dev server (${cliPath})…`);
    const server = await startTemporalDevServer({
      cliPath,
      dbFile: join(dataDir, 'temporal.sqlite'),
      port: config.TEMPORAL_PORT,
      uiPort: config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      logFile: join(dataDir, 'temporal.log'),
    });
    shutdown.add('Temporal', () => server.stop());
    temporalAddress = server.address;
    temporalUi = server.uiUrl;
  }

  const services = await openServices(config, { databaseUrl, temporalAddress });
  shutdown.add('connections', () => services.close());
  const worker = await startWorker(services);
  shutdown.add('worker', () => worker.stop());
  const app = await startApiServer(services);
  shutdown.add('API', () => app.close());

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
  console.error(err instanceof ConfigError ? err.message : err);
  // Whatever did start (PostgreSQL, the Temporal dev server) must not outlive a failed start.
  await shutdown.stop();
  process.exit(1);
});
