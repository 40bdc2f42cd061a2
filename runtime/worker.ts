import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import type pg from 'pg';
import { createActivities } from '../activities';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  pool: pg.Pool;
  provider: Provider;
  store: OutputStore;
  videoConcurrency: number;
  /** A prebuilt bundle (tests build one for all files); otherwise the workflows are bundled here. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  slotPollMs?: number;
  client: Client;
  deadlines: Record<'image' | 'video' | 'chat' | 'upscale', number>;
}

/** The worker runs the generation workflow and its activities, bound to real dependencies. */
export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    ...(deps.workflowBundle ? { workflowBundle: deps.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({
      pool: deps.pool,
      provider: deps.provider,
      store: deps.store,
      videoConcurrency: deps.videoConcurrency,
      client: deps.client,
      deadlines: deps.deadlines,
      ...(deps.slotPollMs === undefined ? {} : { slotPollMs: deps.slotPollMs }),
    }),
    // Activities wait on I/O, not CPU; a small machine can run many at once.
    maxConcurrentActivityTaskExecutions: 200,
    // Short jobs in flight may finish during a graceful stop; longer ones are retried elsewhere.
    shutdownGraceTime: '5 seconds',
  });
}
