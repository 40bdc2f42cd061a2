import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { Logger } from '@temporalio/common';
import { bundleWorkflowCode, Runtime, Worker } from '@temporalio/worker';
import type {
  ActivitySlotInfo,
  CustomSlotSupplier,
  NativeConnection,
  WorkerDeploymentOptions,
  WorkerOptions,
} from '@temporalio/worker';
import type pg from 'pg';
import { createWorkflowQueueActivities } from '../activities';
import { createWebhookActivities } from '../activities/webhooks/delivery';
import type { WebhookActivityDeps } from '../activities/webhooks/delivery';
import { createProviderActivities } from '../activities/generation/provider';
import type { Provider } from '../core/providers/types';
import { ProviderRunPermits } from '../core/providers/run-permits';
import { batchLimitsOf, loadConfig } from '../core/config';
import type { OutputStore } from '../core/storage/output-store';
import { providerTaskQueueOf } from '../core/workflow-contract';
import { OutputTail } from './process';
import type { WorkerTracing } from './tracing';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const BUNDLER = fileURLToPath(new URL('./bundle-workflows.ts', import.meta.url));

/** True when this module runs compiled (dist/), false from the TypeScript sources. */
const COMPILED = import.meta.url.endsWith('.js');

/**
 * The workflow bundle `npm run build` writes beside the compiled runtime (dist/workflow-bundle.js,
 * or dist/workflow-bundle-traced.js with tracing's workflow interceptors), when this module is that
 * compiled runtime. Run from the TypeScript sources there is none: the workflows are bundled as the
 * worker starts.
 */
export function prebuiltWorkflowBundle(traced: boolean): string | undefined {
  if (!COMPILED) return undefined;
  return fileURLToPath(new URL(`../workflow-bundle${traced ? '-traced' : ''}.js`, import.meta.url));
}

/**
 * What a worker process serves: `workflows` (the generation and reconcile workflows, ledger steps,
 * slot waits), `provider` (provider runs, on their own task queue), or `all` (both, as `npm start`).
 */
export type WorkerRole = 'all' | 'workflows' | 'provider';

/** How long activities in flight get to finish when the worker stops; then they are cancelled. */
export const SHUTDOWN_GRACE_MS = 4_000;
/**
 * How long the worker may take to stop at all. A local activity that keeps failing (ledger steps
 * retry without limit) holds its workflow task open, and the SDK's graceful shutdown would wait
 * for it forever; past this the worker gives up on it. Temporal then times the task out and
 * another worker (or this one after a restart) runs it again, which is safe because every ledger
 * step is idempotent.
 */
export const SHUTDOWN_FORCE_MS = 5_000;

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  /**
   * A bundle built beforehand (tests build one for all files; the compiled build has its own, see
   * prebuiltWorkflowBundle); otherwise the workflows are bundled in a child process.
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  client: Client;
  deadlines: Record<'image' | 'video' | 'chat' | 'upscale', number>;
  /** How many lines of a batch (and of an account's batches) run at once; the configuration's defaults when absent. */
  batchLimits?: { perBatch: number; perAccount: number };
  /** Provider runs one worker process takes at once (they wait on upstreams, or on the render pool). */
  providerConcurrency?: number;
  /** Those permits, shared by the provider worker and runs in place; made from providerConcurrency when absent. */
  providerPermits?: ProviderRunPermits;
  /**
   * Whether the workflow worker runs short provider runs in place (true unless false): only where one
   * process serves both roles. A deployment that gives provider runs workers of their own keeps them there.
   */
  runsInPlace?: boolean;
  /** Activities the workflow worker runs at once (200 unless a test wants them scarce). */
  activitySlots?: number;
  /** Workflows kept in memory between tasks (WORKFLOW_CACHE_SIZE); the SDK's default sizes it from the heap. */
  workflowCacheSize?: number;
  /** Worker Versioning (WORKER_BUILD_ID): the deployment version every worker of the process polls as. */
  deployment?: WorkerDeploymentOptions;
  /** When tracing is on; its workflow interceptors must then be in the bundle too. */
  tracing?: WorkerTracing;
}

const versioned = (deployment: WorkerDeploymentOptions | undefined) =>
  deployment ? { workerDeploymentOptions: deployment } : {};
/**
 * Tracing's activity interceptors; for workflow workers also the sink their spans leave the sandbox
 * by, and the workflow interceptors when Worker.create bundles the workflows itself.
 */
function traced(tracing: WorkerTracing | undefined, serves: 'workflows' | 'activities', bundledHere = false) {
  if (!tracing) return {};
  const interceptors = bundledHere
    ? { ...tracing.interceptors, workflowModules: tracing.workflowModules }
    : tracing.interceptors;
  return serves === 'workflows' ? { interceptors, sinks: tracing.sinks } : { interceptors };
}

/** The workflow worker: generation and reconcile workflows and every activity they run on the main queue. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const workflowBundle =
    deps.workflowBundle ??
    (await bundleWorkflowCode({
      workflowsPath: WORKFLOWS_PATH,
      logger: bundlerLogger(Runtime.instance().logger),
      workflowInterceptorModules: deps.tracing?.workflowModules ?? [],
    }));
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    workflowBundle,
    ...versioned(deps.deployment),
    ...traced(deps.tracing, 'workflows'),
    activities: createWorkflowQueueActivities({
      provider: deps.provider,
      store: deps.store,
      providerPermits: deps.providerPermits ?? permitsOf(deps),
      providerInPlaceLimit: deps.runsInPlace === false ? 0 : inPlaceLimitOf(deps.workflowCacheSize),
      pool: deps.pool,
      videoConcurrency: deps.videoConcurrency,
      client: deps.client,
      deadlines: deps.deadlines,
      batchLimits: deps.batchLimits ?? batchLimitsOf(loadConfig({})),
    }),
    // Activities here wait on I/O (slot claims, the reconciler's calls), not CPU.
    maxConcurrentActivityTaskExecutions: deps.activitySlots ?? 200,
    ...(deps.workflowCacheSize === undefined ? {} : { maxCachedWorkflows: deps.workflowCacheSize }),
    // Short jobs in flight may finish during a graceful stop; longer ones are retried elsewhere.
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_MS,
  });
}

/**
 * The SDK logs webpack's statistics of the workflow bundle (a screen of module sizes) at info
 * level on every start. Only what needs attention goes through: errors, and warnings, which
 * webpack reports inside that same text.
 */
export function bundlerLogger(logger: Logger): Logger {
  const quiet = (): void => undefined;
  const info = (message: string, meta?: Record<string, unknown>): void => {
    if (/\bWARNING\b|compiled with \d+ warnings?/.test(message)) logger.warn(message, meta);
  };
  return {
    log: (level, message, meta) => {
      if (level === 'WARN' || level === 'ERROR') logger.log(level, message, meta);
      else if (level === 'INFO') info(message, meta);
    },
    trace: quiet,
    debug: quiet,
    info,
    warn: (message, meta) => void logger.warn(message, meta),
    error: (message, meta) => void logger.error(message, meta),
  };
}

export interface WebhookWorkerDeps extends WebhookActivityDeps {
  connection: NativeConnection;
  namespace: string;
  /** The webhook task queue, never the generations' one. */
  taskQueue: string;
  /** Delivery attempts in flight at once (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  workflowBundle?: WorkerOptions['workflowBundle'];
  deployment?: WorkerDeploymentOptions;
  tracing?: WorkerTracing;
}

/**
 * The webhook worker: delivery workflows and their attempts, on their own task queue with their
 * own slots, so that however slow or hostile a receiver is, generations never wait for it.
 */
export async function createWebhookWorker(deps: WebhookWorkerDeps): Promise<Worker> {
  const { connection, namespace, taskQueue, concurrency, workflowBundle, deployment, tracing, ...activityDeps } = deps;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    ...(workflowBundle ? { workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    ...versioned(deployment),
    ...traced(tracing, 'workflows', !workflowBundle),
    activities: createWebhookActivities(activityDeps),
    // Attempts are local activities (see workflows/webhooks/delivery.ts): this bounds them.
    maxConcurrentLocalActivityExecutions: concurrency,
    // and nothing schedules an activity task on this queue, so no poller waits for one.
    enableNonLocalActivities: false,
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_MS,
  });
}

/** The provider worker: only provider runs, from the provider task queue. */
export async function createProviderWorker(
  deps: Pick<
    WorkerDeps,
    | 'connection'
    | 'namespace'
    | 'taskQueue'
    | 'provider'
    | 'store'
    | 'pool'
    | 'providerConcurrency'
    | 'providerPermits'
    | 'deployment'
    | 'tracing'
  >,
): Promise<Worker> {
  const permits = deps.providerPermits ?? permitsOf(deps);
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: providerTaskQueueOf(deps.taskQueue),
    ...versioned(deps.deployment),
    ...traced(deps.tracing, 'activities'),
    activities: createProviderActivities({ provider: deps.provider, store: deps.store, pool: deps.pool, permits }),
    // The worker polls for a run only when the process has a permit for it (runs in place take them
    // too), and each waiting poll holds one: a quarter of them at most, so that runs in place find
    // permits free while the queue is idle (the SDK's 10 polls would hold all of a small set).
    tuner: {
      activityTaskSlotSupplier: slotsOf(permits),
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 1 },
    },
    activityTaskPollerBehavior: {
      type: 'simple-maximum',
      maximum: Math.max(1, Math.min(10, Math.floor(permits.size / 4))),
    },
    shutdownGraceTime: SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_MS,
  });
}

/**
 * The workers of a role, created (not yet running): for `workflows` and `all`, the generation
 * worker and, when given its settings, the webhook worker (both from one bundle); for `provider`
 * and `all`, the provider worker.
 */
export async function createWorkers(
  given: WorkerDeps & {
    webhooks?: Omit<WebhookWorkerDeps, 'connection' | 'namespace' | 'workflowBundle' | 'deployment' | 'tracing'>;
    workflowsPath?: string;
  },
  role: WorkerRole,
): Promise<Worker[]> {
  const workers: Worker[] = [];
  // One set of provider permits per process: the provider worker's slots and the runs in place share them.
  const deps = { ...given, providerPermits: given.providerPermits ?? permitsOf(given) };
  if (role !== 'provider') {
    const prebuilt = deps.workflowBundle ?? prebuiltFor(deps);
    const bundle = prebuilt ? undefined : await bundleInChildProcess(deps.workflowsPath, deps.tracing?.workflowModules);
    const workflowBundle = bundle ? { codePath: bundle.codePath } : prebuilt;
    try {
      workers.push(await createWorker({ ...deps, workflowBundle, runsInPlace: role === 'all' }));
      if (deps.webhooks) {
        workers.push(
          await createWebhookWorker({
            ...deps.webhooks,
            connection: deps.connection,
            namespace: deps.namespace,
            workflowBundle,
            ...(deps.deployment ? { deployment: deps.deployment } : {}),
            ...(deps.tracing ? { tracing: deps.tracing } : {}),
          }),
        );
      }
    } finally {
      await bundle?.remove();
    }
  }
  if (role !== 'workflows') workers.push(await createProviderWorker(deps));
  return workers;
}

/**
 * A run in place keeps its workflow task open, and the SDK's slot for it, until it ends, and its
 * workflow in the cache: runs in place take at most half of the worker's workflow task slots (the
 * SDK's 40, never more than the cache holds), so that other workflows always have the rest.
 */
const inPlaceLimitOf = (cacheSize: number | undefined): number => Math.floor(Math.min(40, cacheSize ?? 40) / 2);

const permitsOf = (deps: { providerConcurrency?: number | undefined }) =>
  new ProviderRunPermits(deps.providerConcurrency ?? 200);

/** The provider worker's activity slots are the process's provider permits. */
function slotsOf(permits: ProviderRunPermits): CustomSlotSupplier<ActivitySlotInfo> {
  return {
    type: 'custom',
    reserveSlot: async (_ctx, signal) => {
      await permits.take(signal);
      return {};
    },
    tryReserveSlot: () => (permits.tryTake() ? {} : null),
    markSlotUsed: () => undefined,
    releaseSlot: () => permits.give(),
  };
}

/** The compiled build's bundle for these workers, unless they run another workflows entry (the roll-out proof's next version). */
function prebuiltFor(deps: { workflowsPath?: string; tracing?: WorkerTracing }): { codePath: string } | undefined {
  if (deps.workflowsPath !== undefined) return undefined;
  const codePath = prebuiltWorkflowBundle(deps.tracing !== undefined);
  if (codePath === undefined) return undefined;
  // The compiled runtime has neither the workflows' TypeScript nor tsx to bundle them with.
  if (!existsSync(codePath)) throw new Error(`${codePath} is missing: run npm run build`);
  return { codePath };
}

/**
 * Bundles workflows/ with the SDK's webpack in a short-lived child process: webpack's ~110 MB would
 * otherwise stay in the worker's RSS for its whole life. The worker reads the file once, at creation.
 */
export async function bundleInChildProcess(
  workflowsPath = WORKFLOWS_PATH,
  workflowInterceptorModules: readonly string[] = [],
): Promise<{ codePath: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-workflows-'));
  const codePath = join(dir, 'workflows.js');
  const tail = new OutputTail();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', BUNDLER, workflowsPath, codePath, ...workflowInterceptorModules],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
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
