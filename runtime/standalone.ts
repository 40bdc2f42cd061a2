import { ConfigError, loadConfig, privateNetworkWarning } from '../core/config';
import { createShutdown, STOP_DEADLINE_MS } from './lifecycle';
import { openServices } from './services';
import type { Services } from './services';

type Shutdown = ReturnType<typeof createShutdown>;

/**
 * Runs one part of the scaled-out deployment (the API or a worker) against external PostgreSQL
 * and Temporal: parse the configuration, connect, start, and stop cleanly on a signal or a failure.
 */
export function runStandalone(
  what: string,
  serviceName: string,
  start: (services: Services, shutdown: Shutdown) => Promise<string>,
): void {
  const shutdown = createShutdown({ deadlineMs: STOP_DEADLINE_MS });
  const main = async () => {
    const config = loadConfig(process.env);
    if (!config.DATABASE_URL || !config.TEMPORAL_ADDRESS)
      throw new ConfigError(`The ${what} needs DATABASE_URL and TEMPORAL_ADDRESS.`);
    shutdown.onSignals((code) => process.exit(code));
    const warning = privateNetworkWarning(config);
    if (warning) console.warn(warning);
    const services = await openServices(config, {
      databaseUrl: config.DATABASE_URL,
      temporalAddress: config.TEMPORAL_ADDRESS,
      serviceName,
    });
    shutdown.add('connections', () => services.close(), { timeoutMs: 2_000 });
    console.log(await start(services, shutdown));
  };
  main().catch(async (err: unknown) => {
    console.error(err instanceof ConfigError ? err.message : err);
    await shutdown.stop();
    process.exit(1);
  });
}
