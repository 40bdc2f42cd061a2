import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities';
import { createProviderActivities } from '../activities/provider';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';
import { providerTaskQueueOf } from '../workflows/definitions';
import { OutputTail } from './process';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const BUNDLER = fileURLToPath(new URL('./bundle-workflows.ts', import.meta.url));

/**
 * What a worker process serves: `workflows` (the generation and reconcile workflows, ledger steps,
 * slot waits), `provider` (provider runs, on their own task queue), or `all` (both, as `npm start`).
 */
export type WorkerRole = 'all' | 'workflows' | 'provider';

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  /** A prebuilt bundle (tests build one for all files); otherwise the workflows are bundled in a child process. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  slotPollMs?: number;
  client: Client;
  deadlines: Record<'image' | 'video' | 'chat' | 'upscale', number>;
  /** Provider runs one worker process takes at once (they wait on upstreams, or on the render pool). */
  providerConcurrency?: number;
  /** Workflows kept in memory between tasks (WORKFLOW_CACHE_SIZE); the SDK's default sizes it from the heap. */
  workflowCacheSize?: number;
}

/** The workflow worker: generation and reconcile workflows and every activity they run on the main queue. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    // runProvider stays registered here for workflows of the earlier code, which scheduled it on this queue.
    activities: createActivities({
      pool: deps.pool,
      provider: deps.provider,
      store: deps.store,
      videoConcurrency: deps.videoConcurrency,
      client: deps.client,
      deadlines: deps.deadlines,
      ...(deps.slotPollMs === undefined ? {} : { slotPollMs: deps.slotPollMs }),
    }),
    // Activities here wait on I/O (slot polls, the reconciler's calls), not CPU.
    maxConcurrentActivityTaskExecutions: 200,
    ...(deps.workflowCacheSize === undefined ? {} : { maxCachedWorkflows: deps.workflowCacheSize }),
    // Short jobs in flight may finish during a graceful stop; longer ones are retried elsewhere.
    shutdownGraceTime: '5 seconds',
  });
}

/** The provider worker: only provider runs, from the provider task queue. */
export async function createProviderWorker(deps: Pick<WorkerDeps, 'connection' | 'namespace' | 'taskQueue' | 'provider' | 'store' | 'providerConcurrency'>): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: providerTaskQueueOf(deps.taskQueue),
    activities: createProviderActivities({ provider: deps.provider, store: deps.store }),
    maxConcurrentActivityTaskExecutions: deps.providerConcurrency ?? 200,
    shutdownGraceTime: '5 seconds',
  });
}

/** The workers of a role, created (not yet running). */
export async function createWorkers(deps: WorkerDeps, role: WorkerRole): Promise<Worker[]> {
  const workers: Worker[] = [];
  if (role !== 'provider') {
    const bundle = deps.workflowBundle ? undefined : await bundleInChildProcess();
    try {
      workers.push(await createWorker(bundle ? { ...deps, workflowBundle: { codePath: bundle.codePath } } : deps));
    } finally {
      await bundle?.remove();
    }
  }
  if (role !== 'workflows') workers.push(await createProviderWorker(deps));
  return workers;
}

/**
 * Bundles workflows/ with the SDK's webpack in a short-lived child process: webpack's ~110 MB would
 * otherwise stay in the worker's RSS for its whole life. The worker reads the file once, at creation.
 */
export async function bundleInChildProcess(workflowsPath = WORKFLOWS_PATH): Promise<{ codePath: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-workflows-'));
  const codePath = join(dir, 'workflows.js');
  const tail = new OutputTail();
  const child = spawn(process.execPath, ['--import', 'tsx', BUNDLER, workflowsPath, codePath], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8').on('data', (c: string) => tail.push(c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => tail.push(c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const remove = () => rm(dir, { recursive: true, force: true });
  if (code !== 0) {
    await remove();
    throw new Error(`bundling the workflows failed (exit ${code}):\n${tail.toString()}`);
  }
  return { codePath, remove };
}
