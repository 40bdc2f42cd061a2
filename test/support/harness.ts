import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { inject } from 'vitest';
import { buildApp } from '../../api/app';
import { createPool } from '../../core/db/pool';
import { createSimulator } from '../../core/providers/simulator';
import type { Provider } from '../../core/providers/types';
import { createLocalStore } from '../../core/storage';
import type { OutputStore } from '../../core/storage';
import { createWorkers } from '../../runtime/worker';
import { deadlinesOf, loadConfig } from '../../core/config';
import { createSafeHttpClient } from '../../core/net/safe-http';
import { createInputPreparer } from '../../service/inputs';

// Worker chatter (state changes, expected activity failures) would bury the test report.
Runtime.install({ logger: new DefaultLogger('ERROR') });

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
/** Where the harness says its files are served (the app is called with inject, so nothing listens there). */
export const FILES_BASE_URL = 'http://files.test';

export interface HarnessOptions {
  /** Start an in-process worker (default); false when the test runs its own worker process. */
  worker?: boolean;
  syncWaitMs?: number;
  /** The provider the worker runs; default the simulator. */
  provider?: Provider;
  /** Per-kind deadlines (ms); default: the configuration's defaults. */
  deadlines?: Partial<Record<'image' | 'video' | 'chat' | 'upscale', number>>;
  /** Whether upscale inputs may come from loopback and private networks (development mode); default true. */
  allowPrivateNetworks?: boolean;
  videoConcurrency?: number;
}

/** A fresh database (from the migrated template), its own task queue and worker, and the API on top. */
export async function startHarness(options: HarnessOptions = {}) {
  const name = `t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await createDatabase(name);
  const databaseUrl = databaseUrlFor(name);
  const pool = createPool(databaseUrl, 30);
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  const client = new Client({ connection });
  const taskQueue = `q-${name}`;
  const dataDir = join(inject('testDataDir'), name);
  const store: OutputStore = createLocalStore({ rootDir: join(dataDir, 'outputs'), publicBaseUrl: FILES_BASE_URL, signingSecret: 'test-signing-secret-0123456789' });

  let nativeConnection: NativeConnection | undefined;
  let stopWorker = async (): Promise<void> => undefined;
  /**
   * Starts the in-process workers, as `npm start` runs them: the workflow worker and the provider
   * worker on its own task queue (done at once unless `worker: false`; a test may start them later).
   */
  const startWorker = async (): Promise<void> => {
    nativeConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const workers = await createWorkers({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue,
      pool,
      provider: options.provider ?? createSimulator(),
      store,
      videoConcurrency: options.videoConcurrency ?? 5,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      client,
      deadlines: deadlinesOf(loadConfig({})),
      slotPollMs: 50,
    }, 'all');
    const runs = workers.map((w) => w.run());
    stopWorker = async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(runs);
    };
  };
  if (options.worker !== false) await startWorker();

  const app: FastifyInstance = await buildApp({
    pool,
    client,
    taskQueue,
    store,
    adminToken: ADMIN_TOKEN,
    syncWaitMs: options.syncWaitMs ?? 30_000,
    defaultChatCap: 5,
    deadlines: options.deadlines ?? deadlinesOf(loadConfig({})),
    // Tests serve inputs from loopback, as development mode allows; SSRF tests build their own.
    prepareInput: createInputPreparer({ http: createSafeHttpClient({ policy: { allowPrivateNetworks: options.allowPrivateNetworks ?? true } }), store, publicBaseUrl: FILES_BASE_URL }),
  });

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url,
      headers: { ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}), ...opts.headers },
      ...(opts.body === undefined ? {} : { payload: opts.body as object }),
    });

  const admin = (method: 'POST' | 'DELETE', url: string, body?: unknown) => call(method, url, { key: ADMIN_TOKEN, body });

  /** Opens an account and gives it a key with every scope (or the ones named). */
  const account = async (a: { credits: number; plan?: string; chatCap?: number; scopes?: string[]; models?: string[] }) => {
    const created = await admin('POST', '/admin/v1/accounts', { plan: a.plan ?? 'samurai', credits: a.credits, ...(a.chatCap === undefined ? { chatCap: 0 } : { chatCap: a.chatCap }) });
    if (created.statusCode !== 201) throw new Error(`account: ${created.statusCode} ${created.body}`);
    const { id } = created.json<{ id: string }>();
    const keyRes = await admin('POST', `/admin/v1/accounts/${id}/keys`, { scopes: a.scopes ?? ['image', 'video', 'chat'], ...(a.models ? { models: a.models } : {}) });
    if (keyRes.statusCode !== 201) throw new Error(`key: ${keyRes.statusCode} ${keyRes.body}`);
    const key = keyRes.json<{ id: string; key: string }>();
    return { accountId: id, key: key.key, keyId: key.id };
  };

  return {
    app,
    pool,
    client,
    taskQueue,
    store,
    databaseUrl,
    dataDir,
    call,
    admin,
    account,
    startWorker,
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

/** Polls until `check` returns a value, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
