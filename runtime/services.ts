import { resolve, join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { jsonLogger } from './json-logger';
import type pg from 'pg';
import { createRateLimiter } from '../api/shared/rate-limit';
import type { RateLimiter } from '../api/shared/rate-limit';
import {
  allowsPrivateNetworks,
  breakerSettings,
  callbackBaseUrl,
  s3Settings,
  tracingOf,
  upstreamSettings,
  webhookTaskQueueOf,
} from '../core/config';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createProviderRouter } from '../core/providers/router';
import type { Config } from '../core/config';
import { migrate } from '../core/db/migrate';
import { createPool } from '../core/db/pool';
import { createPgRouteLog, createPgUpstreamHealth } from '../core/db/upstreams';
import { lossRoutes } from '../core/providers/margins';
import { createSimulator } from '../core/providers/simulator';
import type { Provider } from '../core/providers/types';
import { createLocalStore } from '../core/storage/output-store';
import type { OutputStore } from '../core/storage/output-store';
import { createWebhookDispatcher } from '../service/webhooks/dispatch';
import type { WebhookDispatcher } from '../service/webhooks/dispatch';
import { persistentSecret } from './secrets';
import { ensureNamespace, registerSearchAttributes } from './temporal-setup';
import type { Tracing } from './tracing';

export interface Services {
  config: Config;
  dataDir: string;
  pool: pg.Pool;
  client: Client;
  nativeConnection: NativeConnection;
  store: OutputStore;
  /** Shared through Redis when REDIS_URL is set; only the API uses it (it connects on first use). */
  limiter: RateLimiter;
  provider: Provider;
  /** Hands outgoing webhook deliveries to Temporal: the relay's and the API's one dispatcher. */
  dispatcher: WebhookDispatcher;
  adminToken: { value: string; generated: boolean };
  /** Seals webhook secrets (WEBHOOK_SECRET_KEY, or generated once into DATA_DIR). */
  webhookSecretKey: string;
  publicBaseUrl: string;
  /** Present when OTEL_EXPORTER_OTLP_ENDPOINT is set: the Temporal client already traces. */
  tracing?: Tracing;
  close(): Promise<void>;
}

// The SDK's info lines are worker lifecycle chatter (state changes, "no Nexus services"); at the
// default level the SDK says only what needs attention, and its info lines show from `debug` on.
const TEMPORAL_LOG_LEVELS = {
  fatal: 'ERROR',
  error: 'ERROR',
  warn: 'WARN',
  info: 'INFO',
  debug: 'DEBUG',
  trace: 'TRACE',
  silent: 'ERROR',
} as const;

/**
 * The composition root's first half: connects to PostgreSQL and Temporal (wherever they run),
 * brings the schema and the search attributes up to date, and builds once what both the API
 * (runtime/api-app.ts) and the worker (runtime/worker-runner.ts) need.
 */
export async function openServices(
  config: Config,
  where: {
    databaseUrl: string;
    temporalAddress: string;
    /** The spans' service name unless OTEL_SERVICE_NAME says. */ serviceName?: string;
  },
): Promise<Services> {
  // The Temporal runtime is process-wide and installed once, before any connection exists. It
  // would otherwise shut the worker down on SIGINT/SIGTERM by itself, at once and out of order
  // (before the API has stopped taking requests); the process's own shutdown decides instead.
  Runtime.install({ logger: jsonLogger(TEMPORAL_LOG_LEVELS[config.LOG_LEVEL]), shutdownSignals: [] });
  const tracingSettings = tracingOf(config, where.serviceName ?? 'gensvc');
  // Loaded only when on: tracing off costs nothing, not even the import.
  const tracing = tracingSettings ? (await import('./tracing')).startTracing(tracingSettings) : undefined;
  const dataDir = resolve(config.DATA_DIR);
  const pool = createPool(where.databaseUrl, 20);
  await migrate(pool);

  const connection = await Connection.connect({ address: where.temporalAddress });
  const client = new Client({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...(tracing ? { interceptors: tracing.client } : {}),
  });
  await ensureNamespace(client, config.TEMPORAL_NAMESPACE);
  await registerSearchAttributes(client, config.TEMPORAL_NAMESPACE);
  const nativeConnection = await NativeConnection.connect({ address: where.temporalAddress });

  const publicBaseUrl =
    config.PUBLIC_BASE_URL ?? `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`;
  const { store, closeStore } = await openStore(config, dataDir, publicBaseUrl);
  // Redis's, S3's, Stripe's and SMTP's clients are loaded only by a process configured to use them.
  const limiter = config.REDIS_URL
    ? (await import('./redis-rate-limit')).createRedisRateLimiter({ url: config.REDIS_URL })
    : createRateLimiter();
  const adminToken = await persistentSecret(dataDir, 'admin-token', config.ADMIN_TOKEN);
  const webhookSecretKey = (await persistentSecret(dataDir, 'webhook-secret-key', config.WEBHOOK_SECRET_KEY)).value;
  const simulator = createSimulator(config.SIM_LATENCY_MS === undefined ? {} : { latencyMs: config.SIM_LATENCY_MS });
  // Files an upstream hands back by URL come from wherever it says: fetched SSRF-safely.
  const outputs = createSafeHttpClient({ policy: { allowPrivateNetworks: allowsPrivateNetworks(config) } });
  const log = Runtime.instance().logger;
  const upstreams = upstreamSettings(config);
  for (const loss of lossRoutes(upstreams)) {
    log.warn(
      `model ${loss.model} costs more at upstream ${loss.upstream} than it sells for: every run there loses money`,
      { ...loss },
    );
  }
  const provider = createProviderRouter(upstreams, simulator, outputs, {
    health: createPgUpstreamHealth(pool, breakerSettings(config)),
    log: createPgRouteLog(pool),
    callbackBaseUrl: callbackBaseUrl(config),
    warn: (message, err) => {
      log.warn(message, { error: (err as Error).message });
    },
  });

  return {
    config,
    dataDir,
    pool,
    client,
    nativeConnection,
    store,
    limiter,
    provider,
    dispatcher: createWebhookDispatcher({ client, taskQueue: webhookTaskQueueOf(config) }),
    adminToken,
    webhookSecretKey,
    publicBaseUrl,
    ...(tracing ? { tracing } : {}),
    async close() {
      await limiter.close();
      closeStore();
      outputs.close();
      await nativeConnection.close().catch(() => undefined);
      await connection.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
      await tracing?.shutdown().catch(() => undefined);
    },
  };
}

/** The S3-compatible bucket when S3_* is configured (its bucket made if missing), else DATA_DIR/outputs. */
async function openStore(
  config: Config,
  dataDir: string,
  publicBaseUrl: string,
): Promise<{ store: OutputStore; closeStore: () => void }> {
  const s3 = s3Settings(config);
  if (s3) {
    const { createS3Store } = await import('../core/storage/s3');
    const store = createS3Store(s3);
    await store.ensureBucket();
    return { store, closeStore: () => store.close() };
  }
  const signing = await persistentSecret(dataDir, 'url-signing-secret', config.URL_SIGNING_SECRET);
  return {
    store: createLocalStore({ rootDir: join(dataDir, 'outputs'), publicBaseUrl, signingSecret: signing.value }),
    closeStore: () => undefined,
  };
}
