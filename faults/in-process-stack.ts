// The service in one process on a fresh embedded PostgreSQL and Temporal dev server, for the
// proofs that drive workers themselves (faults/rollout.ts, faults/fairness.ts): the API listening
// on a free port, workers started by the caller.
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../core/config';
import type { Config } from '../core/config';
import { startApiServer, stopApiServer } from '../runtime/api-server';
import { startEmbeddedPostgres } from '../runtime/embedded-postgres';
import { freePort } from '../runtime/process';
import { openServices } from '../runtime/services';
import type { Services } from '../runtime/services';
import { ensureTemporalCli } from '../runtime/temporal-cli';
import { startTemporalDevServer } from '../runtime/temporal-dev-server';
import { TEMPORAL_DYNAMIC_CONFIG } from '../runtime/temporal-server-config';

export interface InProcessStack {
  services: Services;
  config: Config;
  baseUrl: string;
  adminToken: string;
  /** Starts the API on the services (once the caller's workers are up, if it wants). */
  startApi(): Promise<void>;
  /** Runs `stop` (a worker's, say) before everything else when the stack stops. */
  onStop(stop: () => Promise<unknown>): void;
  /** Stops what started, last first; keeps the folder when asked (a failed proof). */
  stop(keepData: boolean): Promise<void>;
}

export async function startInProcessStack(
  name: string,
  extra: { dynamicConfig?: Record<string, boolean | number | string>; env?: Record<string, string> } = {},
): Promise<InProcessStack> {
  const dataDir = join(process.cwd(), '.test-data', `${name}-${process.pid}`);
  await mkdir(dataDir, { recursive: true });
  const stops: (() => Promise<unknown>)[] = [];
  const stop = async (keepData: boolean) => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
    if (!keepData) await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const postgres = await startEmbeddedPostgres({
      dataDir: join(dataDir, 'postgres'),
      logFile: join(dataDir, 'postgres.log'),
      readyTimeoutMs: 120_000,
    });
    stops.push(() => postgres.stop());
    await postgres.ensureDatabase('gensvc');
    const temporal = await startTemporalDevServer({
      cliPath: await ensureTemporalCli(),
      dbFile: join(dataDir, 'temporal.sqlite'),
      headless: true,
      logFile: join(dataDir, 'temporal.log'),
      readyTimeoutMs: 120_000,
      dynamicConfig: { ...TEMPORAL_DYNAMIC_CONFIG, ...extra.dynamicConfig },
    });
    stops.push(() => temporal.stop());
    const port = await freePort();
    const adminToken = randomBytes(24).toString('base64url');
    const config = loadConfig({
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: postgres.urlFor('gensvc'),
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: name,
      ADMIN_TOKEN: adminToken,
      URL_SIGNING_SECRET: randomBytes(24).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(24).toString('base64url'),
      LOG_LEVEL: 'warn',
      ...extra.env,
    });
    const services = await openServices(config, {
      databaseUrl: config.DATABASE_URL!,
      temporalAddress: temporal.address,
    });
    stops.push(() => services.close());
    let app: FastifyInstance | undefined;
    return {
      services,
      config,
      baseUrl: `http://127.0.0.1:${port}`,
      adminToken,
      async startApi() {
        app = await startApiServer(services);
        stops.push(() => stopApiServer(app!));
      },
      onStop: (step) => void stops.push(step),
      stop,
    };
  } catch (err) {
    await stop(true);
    throw err;
  }
}
