import { resolve, join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type pg from 'pg';
import type { Config } from '../core/config';
import { migrate } from '../core/db/migrate';
import { createPool } from '../core/db/pool';
import { createSimulator } from '../core/providers/simulator';
import type { Provider } from '../core/providers/types';
import { createLocalStore } from '../core/storage';
import type { OutputStore } from '../core/storage';
import { persistentSecret } from './secrets';
import { registerSearchAttributes } from './temporal-setup';

export interface Services {
  config: Config;
  dataDir: string;
  pool: pg.Pool;
  client: Client;
  nativeConnection: NativeConnection;
  store: OutputStore;
  provider: Provider;
  adminToken: { value: string; generated: boolean };
  publicBaseUrl: string;
  close(): Promise<void>;
}

// The SDK's info lines are worker lifecycle chatter (state changes, "no Nexus services"); at the
// default level the SDK says only what needs attention, and its info lines show from `debug` on.
const TEMPORAL_LOG_LEVELS = { fatal: 'ERROR', error: 'ERROR', warn: 'WARN', info: 'WARN', debug: 'DEBUG', trace: 'TRACE', silent: 'ERROR' } as const;

/**
 * Connects to PostgreSQL and Temporal (wherever they run), brings the schema and the search
 * attributes up to date, and builds what both the API and the worker need.
 */
export async function openServices(config: Config, where: { databaseUrl: string; temporalAddress: string }): Promise<Services> {
  // The Temporal runtime is process-wide and installed once, before any connection exists. It
  // would otherwise shut the worker down on SIGINT/SIGTERM by itself, at once and out of order
  // (before the API has stopped taking requests); the process's own shutdown decides instead.
  Runtime.install({ logger: new DefaultLogger(TEMPORAL_LOG_LEVELS[config.LOG_LEVEL]), shutdownSignals: [] });
  const dataDir = resolve(config.DATA_DIR);
  const pool = createPool(where.databaseUrl, 20);
  await migrate(pool);

  const connection = await Connection.connect({ address: where.temporalAddress });
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  await registerSearchAttributes(client, config.TEMPORAL_NAMESPACE);
  const nativeConnection = await NativeConnection.connect({ address: where.temporalAddress });

  const publicBaseUrl = config.PUBLIC_BASE_URL ?? `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`;
  const signing = await persistentSecret(dataDir, 'url-signing-secret', config.URL_SIGNING_SECRET);
  const store = createLocalStore({ rootDir: join(dataDir, 'outputs'), publicBaseUrl, signingSecret: signing.value });
  const adminToken = await persistentSecret(dataDir, 'admin-token', config.ADMIN_TOKEN);
  const provider = createSimulator(config.SIM_LATENCY_MS === undefined ? {} : { latencyMs: config.SIM_LATENCY_MS });

  return {
    config,
    dataDir,
    pool,
    client,
    nativeConnection,
    store,
    provider,
    adminToken,
    publicBaseUrl,
    async close() {
      await nativeConnection.close().catch(() => undefined);
      await connection.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}
