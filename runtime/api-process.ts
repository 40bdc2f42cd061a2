import { ConfigError, loadConfig } from '../core/config';
import { startApiServer } from './api-server';
import { createShutdown } from './lifecycle';
import { openServices } from './services';

/** The API alone (docker-compose `api`): needs DATABASE_URL and TEMPORAL_ADDRESS. */
const shutdown = createShutdown();

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS) throw new ConfigError('The API needs DATABASE_URL and TEMPORAL_ADDRESS.');
  shutdown.onSignals((code) => process.exit(code));
  const services = await openServices(config, { databaseUrl: config.DATABASE_URL, temporalAddress: config.TEMPORAL_ADDRESS });
  shutdown.add('connections', () => services.close());
  const app = await startApiServer(services);
  shutdown.add('API', () => app.close());
  console.log(`API listening on ${services.publicBaseUrl}`);
}

main().catch(async (err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  await shutdown.stop();
  process.exit(1);
});
