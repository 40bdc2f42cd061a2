import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { Worker } from '@temporalio/worker';
import type { FastifyInstance, FastifyServerOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { inject } from 'vitest';
import { composeApi } from '../../runtime/api-app';
import { createRateLimiter } from '../../api/shared/rate-limit';
import type { ApiInputs } from '../../runtime/api-app';
import type { DashboardLimits } from '../../api/dashboard/api';
import { freePort } from '../../runtime/process';
import { createPool } from '../../core/db/pool';
import { createSimulator } from '../../core/providers/simulator';
import type { Provider } from '../../core/providers/types';
import { createLocalStore } from '../../core/storage/output-store';
import type { OutputStore } from '../../core/storage/output-store';
import { createWorkers } from '../../runtime/worker';
import type { WorkerRole } from '../../runtime/worker';
import { deadlinesOf, loadConfig } from '../../core/config';
import { createInputPreparer } from '../../service/generation/inputs';
import { createSafeHttpClient } from '../../core/net/safe-http';
import type { SafeHttpClient } from '../../core/net/safe-http';
import { createSecretBox } from '../../core/webhooks/secret-box';
import { startWebhookRelay } from '../../runtime/webhook-relay';
import { createWebhookDispatcher } from '../../service/webhooks/dispatch';

// Worker chatter (state changes, expected activity failures) would bury the test report. Worker
// heartbeats every 5 s (the SDK's default is 60 s), so that a test sees its workers listed soon.
Runtime.install({ logger: new DefaultLogger('ERROR'), workerHeartbeatInterval: '5s' });

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
/** Where the harness says its files are served (the app is called with inject, so nothing listens there). */
export const FILES_BASE_URL = 'http://files.test';
export const WEBHOOK_SECRET_KEY = 'test-webhook-secret-key-0123456789';

/** Webhook deliveries in a test: a worker on the webhook task queue and the outbox relay. */
export interface HarnessWebhookOptions {
  /** Compressed waits between attempts; the production schedule when absent. */
  retryScheduleMs?: number[];
  disableAfterMs?: number;
  clock?: () => number;
  /** The delivery client; a development-mode one (loopback allowed) when absent. */
  http?: SafeHttpClient;
  perEndpointConcurrency?: number;
  concurrency?: number;
  relayPollMs?: number;
}

export interface HarnessOptions {
  /** Start an in-process worker (default); false when the test runs its own worker process. */
  worker?: boolean;
  syncWaitMs?: number;
  /** Per-kind deadlines (ms); default: the configuration's defaults. */
  deadlines?: Partial<Record<'image' | 'video' | 'chat' | 'upscale', number>>;
  /** Whether upscale inputs may come from loopback and private networks (development mode); default true. */
  allowPrivateNetworks?: boolean;
  videoConcurrency?: number;
  /** Start the webhook worker and the outbox relay too, with these settings. */
  webhooks?: HarnessWebhookOptions;
  /** The provider for the worker and the API's streamed chats; the simulator by default. */
  provider?: Provider | ((pool: pg.Pool) => Provider);
  /**
   * Listen on an ephemeral loopback port (for a browser or fetch): output URLs and set-password
   * links then point at it, and session cookies are not Secure (development mode over http).
   */
  listen?: boolean;
  dashboardLimits?: Partial<DashboardLimits>;
  /** Self-service sign-up open (SIGNUP=open) with these settings; closed when absent. */
  signup?: { startingCredits: number; chatCap: number };
  /** Buying credits with Stripe (stripe-mock's URL as apiUrl); no billing routes or page when absent. */
  billing?: {
    secretKey: string;
    webhookSecret: string;
    apiUrl: string;
    minPurchaseCredits: number;
    maxPurchaseCredits: number;
  };
  /** The API's logger settings (e.g. a stream that captures the lines); silent when absent. */
  logger?: FastifyServerOptions['logger'];
  /** The upstreams whose webhooks the API takes (POST /providers/…/webhook); none when absent. */
  upstreamCallbacks?: ApiInputs['upstreamCallbacks'];
  /** Which in-process workers run: `workflows` leaves provider runs to a worker process the test starts. */
  workerRole?: WorkerRole;
  providerConcurrency?: number;
  /** How an account's starts are paced; by default as in production, its room the provider concurrency. */
  startPace?: ApiInputs['startPace'];
  /** The workflow worker's activity slots (200 as in production when absent). */
  activitySlots?: number;
  /** The rate limit's window (the real in-process limiter; 60 s as in production when absent). */
  rateWindowMs?: number;
  /** Batches: price per kind, file limits, a shorter completion window. */
  batches?: ApiInputs['batches'];
  /** How many lines of a batch, and of an account's batches, run at once (the configuration's defaults when absent). */
  batchLimits?: { perBatch: number; perAccount: number };
}

/** A fresh database (from the migrated template), its own task queue and worker, and the API on top. */
export async function startHarness(options: HarnessOptions = {}) {
  const name = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await createDatabase(name);
  const databaseUrl = databaseUrlFor(name);
  const pool = createPool(databaseUrl, 30);
  // A provider may need the database (the upstream router's breaker and record).
  const provider = typeof options.provider === 'function' ? options.provider(pool) : options.provider;
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const taskQueue = `q-${name}`;
  const webhookTaskQueue = `${taskQueue}-webhooks`;
  const dataDir = join(inject('testDataDir'), name);
  const port = options.listen ? await freePort() : undefined;
  const baseUrl = port === undefined ? undefined : `http://127.0.0.1:${port}`;
  const store: OutputStore = createLocalStore({
    rootDir: join(dataDir, 'outputs'),
    publicBaseUrl: baseUrl ?? FILES_BASE_URL,
    signingSecret: 'test-signing-secret-0123456789',
  });

  // One dispatcher hands deliveries to Temporal for the relay and the API alike, as in runtime/services.ts.
  const dispatcher = createWebhookDispatcher({
    client,
    taskQueue: webhookTaskQueue,
    retryScheduleMs: options.webhooks?.retryScheduleMs,
  });

  let nativeConnection: NativeConnection | undefined;
  let stopWorker = async (): Promise<void> => undefined;
  let providerWorker: Worker | undefined;
  /**
   * Starts the in-process workers, as `npm start` runs them: the workflow worker and the provider
   * worker on its own task queue (done at once unless `worker: false`; a test may start them later).
   */
  const startWorker = async (): Promise<void> => {
    nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const webhookHttp = options.webhooks
      ? (options.webhooks.http ?? createSafeHttpClient({ policy: { allowPrivateNetworks: true } }))
      : undefined;
    const closeHttp = (): void => {
      if (options.webhooks && !options.webhooks.http) webhookHttp?.close();
    };
    const workers = await createWorkers(
      {
        connection: nativeConnection,
        namespace: 'default',
        taskQueue,
        pool,
        provider: provider ?? createSimulator(),
        store,
        videoConcurrency: options.videoConcurrency ?? 5,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        client,
        deadlines: deadlinesOf(loadConfig({})),
        ...(options.providerConcurrency === undefined ? {} : { providerConcurrency: options.providerConcurrency }),
        ...(options.activitySlots === undefined ? {} : { activitySlots: options.activitySlots }),
        ...(options.batchLimits ? { batchLimits: options.batchLimits } : {}),
        ...(options.webhooks
          ? {
              webhooks: {
                taskQueue: webhookTaskQueue,
                concurrency: options.webhooks.concurrency ?? 50,
                pool,
                store,
                secretBox: createSecretBox(WEBHOOK_SECRET_KEY),
                http: webhookHttp!,
                ...(options.webhooks.clock ? { clock: options.webhooks.clock } : {}),
                ...(options.webhooks.disableAfterMs === undefined
                  ? {}
                  : { disableAfterMs: options.webhooks.disableAfterMs }),
                ...(options.webhooks.perEndpointConcurrency === undefined
                  ? {}
                  : { perEndpointConcurrency: options.webhooks.perEndpointConcurrency }),
              },
            }
          : {}),
      },
      options.workerRole ?? 'all',
    );
    providerWorker = options.workerRole === 'workflows' ? undefined : workers.at(-1);
    let stopRelay = async (): Promise<void> => undefined;
    const hooks = options.webhooks;
    if (hooks) {
      const relay = startWebhookRelay({
        pool,
        dispatcher,
        pollMs: hooks.relayPollMs ?? 1_000,
        onError: (err) => console.warn('webhook relay:', err),
      });
      stopRelay = () => relay.stop();
    }
    const runs = workers.map((w) => w.run());
    stopWorker = async () => {
      await stopRelay();
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(runs);
      closeHttp();
    };
  };
  if (options.worker !== false) await startWorker();

  const app: FastifyInstance = await composeApi({
    pool,
    client,
    taskQueue,
    store,
    adminToken: ADMIN_TOKEN,
    syncWaitMs: options.syncWaitMs ?? 30_000,
    defaultChatCap: 5,
    deadlines: options.deadlines ?? deadlinesOf(loadConfig({})),
    ...(options.rateWindowMs ? { limiter: createRateLimiter(Date.now, options.rateWindowMs) } : {}),
    // Tests serve inputs from loopback, as development mode allows; SSRF tests build their own.
    ...(provider ? { provider } : {}),
    prepareInput: createInputPreparer({
      http: createSafeHttpClient({ policy: { allowPrivateNetworks: options.allowPrivateNetworks ?? true } }),
      store,
      publicBaseUrl: FILES_BASE_URL,
    }),
    webhooks: {
      secretKey: WEBHOOK_SECRET_KEY,
      developmentMode: true,
      ...(options.webhooks?.clock ? { clock: options.webhooks.clock } : {}),
    },
    dispatcher,
    ...(baseUrl ? { publicBaseUrl: baseUrl, secureCookies: false } : {}),
    ...(options.dashboardLimits ? { dashboardLimits: options.dashboardLimits } : {}),
    ...(options.signup ? { signup: options.signup } : {}),
    ...(options.billing ? { billing: options.billing } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.upstreamCallbacks ? { upstreamCallbacks: options.upstreamCallbacks } : {}),
    ...(options.batches ? { batches: options.batches } : {}),
    startPace: options.startPace ?? { room: options.providerConcurrency ?? loadConfig({}).PROVIDER_CONCURRENCY },
  });
  if (port !== undefined) await app.listen({ port, host: '127.0.0.1' });

  const call = async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url,
      headers: { ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
      ...(opts.body === undefined ? {} : { payload: opts.body as object }),
    });

  const admin = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    call(method, url, { key: ADMIN_TOKEN, body });

  /** Opens an account and gives it a key with image, video, chat and webhooks (or the scopes named). */
  const account = async (a: {
    credits: number;
    plan?: string;
    chatCap?: number;
    scopes?: string[];
    models?: string[];
  }) => {
    const created = await admin('POST', '/admin/v1/accounts', {
      plan: a.plan ?? 'samurai',
      credits: a.credits,
      ...(a.chatCap === undefined ? { chatCap: 0 } : { chatCap: a.chatCap }),
    });
    if (created.statusCode !== 201) throw new Error(`account: ${created.statusCode} ${created.body}`);
    const { id } = created.json<{ id: string }>();
    const keyRes = await admin('POST', `/admin/v1/accounts/${id}/keys`, {
      scopes: a.scopes ?? ['image', 'video', 'chat', 'webhooks'],
      ...(a.models ? { models: a.models } : {}),
    });
    if (keyRes.statusCode !== 201) throw new Error(`key: ${keyRes.statusCode} ${keyRes.body}`);
    const key = keyRes.json<{ id: string; key: string }>();
    return { accountId: id, key: key.key, keyId: key.id };
  };

  return {
    app,
    /** Where the app listens (with `listen: true`). */
    baseUrl,
    pool,
    client,
    taskQueue,
    webhookTaskQueue,
    store,
    databaseUrl,
    dataDir,
    call,
    admin,
    account,
    startWorker,
    /** The in-process provider worker's own count of the activities it runs now (its slots in use). */
    providerActivitiesInFlight: (): number | undefined => providerWorker?.getStatus().numInFlightActivities,
    async close() {
      await app.close();
      await stopWorker();
      await nativeConnection?.close();
      await connection.close();
      await pool.end();
      await dropDatabase(name);
    },
  };
}

export type Harness = Awaited<ReturnType<typeof startHarness>>;

export function databaseUrlFor(name: string): string {
  const url = new URL(inject('postgresUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: inject('postgresUrl') });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

export async function createDatabase(name: string): Promise<void> {
  // Two files cloning the template at the same moment can collide; a short retry settles it.
  for (let attempt = 0; ; attempt++) {
    try {
      await withAdmin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${inject('templateDatabase')}`));
      return;
    } catch (err) {
      if (attempt >= 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
}

export async function dropDatabase(name: string): Promise<void> {
  await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** A migrated database of its own for a test that breaks it (drops tables…), dropped afterwards. */
export async function withScratchDatabase<T>(work: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const name = `t_scratch_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await createDatabase(name);
  const pool = new pg.Pool({ connectionString: databaseUrlFor(name), max: 2 });
  // DROP ... WITH (FORCE) ends any connection still open (57P01); that is the point, not a failure.
  pool.on('error', () => undefined);
  try {
    return await work(pool);
  } finally {
    await pool.end();
    await dropDatabase(name);
  }
}

/** Polls until `check` returns a value, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
