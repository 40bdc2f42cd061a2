// `npm run bench -- --only=startup [--quick] [--keep]`: how long the service's processes take to
// start, and what they hold once idle, in both forms on the same PostgreSQL and Temporal dev
// server, taking turns: `compiled` (dist/ from npm run build, workflows prebuilt: what the image
// runs) and `source` (the TypeScript through tsx, the workflows bundled by webpack as the worker
// starts: what npm start runs). Each round starts an API process (runtime/api-process) and a
// workflow worker (runtime/worker-process, WORKER_ROLE=workflows) and measures:
//   API       spawn → GET /health answers 200
//   worker    spawn → its first workflow task: a reconcile workflow waits on the worker's (new,
//             empty) task queue before the spawn, and its WorkflowTaskStarted event says when the
//             worker polled it (the server's clock; same machine)
//   RSS       each process's resident set once idle: the median of ten samples, a second apart,
//             from 5 s after it is ready (a garbage collection moves a single sample by tens of MB)
// Every process is started with the Node running the bench (`npm run bench`: the project's Node 24;
// `node --import tsx bench/run.ts --only=startup` with another node measures that one).
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { createShutdown } from '../runtime/lifecycle';
import { freePort } from '../runtime/process';
import { startEntryProcess } from '../deploy/processes/children';
import type { EntryProcess } from '../deploy/processes/children';
import { guardRun } from './harness';
import { processRss } from './procfs';
import { writeResults } from './results';
import { createStack, serviceCommand } from './stack';
import type { ServiceForm } from './stack';
import { round } from './stats';

const log = (line: string) => console.error(`[bench] ${line}`);
const FORMS: ServiceForm[] = ['source', 'compiled'];
const READY_TIMEOUT_MS = 180_000;
const EventType = proto.temporal.api.enums.v1.EventType;

interface Sample {
  healthMs: number;
  firstTaskMs: number;
  apiRssMb: number;
  workerRssMb: number;
}

export async function runStartup(args: {
  quick: boolean;
  keep: boolean;
  temporalDb: 'file' | 'memory';
}): Promise<number> {
  const rounds = args.quick ? 1 : 3;
  const dataDir = join(process.cwd(), '.test-data', `bench-${process.pid}`);
  // No service process of its own: this scenario starts them, one at a time.
  const stackHandle = createStack({
    dataDir,
    workerMode: 'process',
    service: false,
    temporalDb: args.temporalDb,
    keepData: args.keep,
    log,
    reference: false,
  });
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  const running = new Set<EntryProcess>();
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('service processes', () => Promise.all([...running].map((p) => p.stop(5_000))));
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: args.quick ? 10 : 25,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });
  try {
    const s = await stackHandle.start();
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOST: '127.0.0.1',
      DATABASE_URL: s.databaseUrl,
      TEMPORAL_ADDRESS: s.temporal.address,
      ADMIN_TOKEN: randomBytes(24).toString('base64url'),
      URL_SIGNING_SECRET: randomBytes(24).toString('base64url'),
      WEBHOOK_SECRET_KEY: randomBytes(24).toString('base64url'),
      LOG_LEVEL: 'silent',
      MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
    };
    const start = async (form: ServiceForm, entry: string, extra: Record<string, string>, readyText: string) => {
      const child = await startEntryProcess({
        entry,
        command: serviceCommand(form, entry),
        env: { ...env, ...extra },
        readyText,
        readyTimeoutMs: READY_TIMEOUT_MS,
        onSpawn: (pid) => s.watch('worker', pid),
      });
      running.add(child);
      return child;
    };

    const once = async (form: ServiceForm, label: string): Promise<Sample> => {
      const port = await freePort();
      const dir = join(dataDir, label);
      // The API: spawn → /health 200.
      const apiStart = performance.now();
      const apiReady = start(form, 'runtime/api-process.ts', { PORT: String(port), DATA_DIR: dir }, 'API listening');
      const healthMs = await untilHealthy(`http://127.0.0.1:${port}/health`, apiStart, apiReady);
      const api = await apiReady;
      const apiRssMb = await idleRssMb(api.pid);
      await api.stop();
      running.delete(api);

      // The worker: a workflow already waits on its empty task queue when it is spawned.
      const taskQueue = `startup-${label}`;
      const handle = await s.client.workflow.start('reconcile', {
        taskQueue,
        workflowId: `startup-probe-${label}`,
        args: [{ graceMs: 60_000 }],
      });
      const spawnedAt = Date.now();
      const worker = await start(
        form,
        'runtime/worker-process.ts',
        { PORT: String(port), DATA_DIR: dir, TEMPORAL_TASK_QUEUE: taskQueue, WORKER_ROLE: 'workflows' },
        'worker polling',
      );
      const firstTaskMs = (await firstTaskAt(s.client, handle.workflowId)) - spawnedAt;
      const workerRssMb = await idleRssMb(worker.pid);
      await worker.stop();
      running.delete(worker);
      await handle.terminate('startup bench').catch(() => undefined);
      return { healthMs: round(healthMs, 0), firstTaskMs, apiRssMb, workerRssMb };
    };

    log(`warm-up: one unmeasured start of each form (migrations, the OS file cache, tsx's cache)`);
    for (const form of FORMS) await once(form, `warmup-${form}`);
    const samples: Record<ServiceForm, Sample[]> = { source: [], compiled: [] };
    for (let i = 0; i < rounds; i++) {
      // Turns alternate which form goes first.
      for (const form of i % 2 === 0 ? FORMS : [...FORMS].reverse()) {
        const sample = await once(form, `${form}-${i}`);
        samples[form].push(sample);
        log(
          `round ${i + 1}/${rounds} ${form}: /health after ${sample.healthMs} ms, first workflow task after ${sample.firstTaskMs} ms; idle RSS API ${sample.apiRssMb} MB, worker ${sample.workerRssMb} MB`,
        );
      }
    }

    const median = (form: ServiceForm, key: keyof Sample) =>
      [...samples[form].map((x) => x[key])].sort((a, b) => a - b)[Math.floor(samples[form].length / 2)]!;
    const rows: [string, keyof Sample, string][] = [
      ['API: spawn → /health 200', 'healthMs', 'ms'],
      ['worker: spawn → first workflow task', 'firstTaskMs', 'ms'],
      ['API: RSS idle', 'apiRssMb', 'MB'],
      ['worker: RSS idle', 'workerRssMb', 'MB'],
    ];
    const lines = [
      `\nStart-up (${rounds} round${rounds > 1 ? 's' : ''} each, medians; each round in brackets) — Node ${process.version}, load average ${loadText()}`,
      `${'metric'.padEnd(38)} ${'source (tsx)'.padStart(32)} ${'compiled (dist/)'.padStart(32)}  ratio`,
      ...rows.map(([name, key, unit]) => {
        const cell = (form: ServiceForm) =>
          `${median(form, key)} ${unit} [${samples[form].map((x) => x[key]).join(', ')}]`.padStart(32);
        return `${name.padEnd(38)} ${cell('source')} ${cell('compiled')}  ${(median('compiled', key) / median('source', key)).toFixed(2)}×`;
      }),
    ];
    console.log(lines.join('\n'));
    const latest = await writeResults(
      JSON.stringify({ only: 'startup', date: new Date().toISOString(), node: process.version, samples }, null, 2),
      'startup',
    );
    log(`results in ${latest}`);
    return 0;
  } finally {
    await shutdown.stop();
  }
}

/** ms from `since` until `url` answers 200 (polled every 10 ms), or the start's own failure. */
async function untilHealthy(url: string, since: number, started: Promise<unknown>): Promise<number> {
  let failed: Error | undefined;
  started.catch((err: unknown) => (failed = err instanceof Error ? err : new Error(String(err))));
  for (;;) {
    if (failed) throw failed;
    const res = await fetch(url).catch(() => undefined);
    if (res?.status === 200) return performance.now() - since;
    if (performance.now() - since > READY_TIMEOUT_MS) throw new Error(`${url} did not answer 200 in time`);
    await sleep(10);
  }
}

/** The epoch ms of a workflow's first WorkflowTaskStarted event, polled every 20 ms. */
async function firstTaskAt(client: Client, workflowId: string): Promise<number> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const started = history.events?.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    const time = started?.eventTime;
    if (time) return Number(time.seconds ?? 0) * 1000 + Math.round(Number(time.nanos ?? 0) / 1e6);
    await sleep(20);
  }
  throw new Error(`${workflowId}: no workflow task was polled in time`);
}

/** The median of ten RSS samples a second apart, from 5 s on, in MB. */
async function idleRssMb(pid: number): Promise<number> {
  await sleep(5_000);
  const samples: number[] = [];
  for (let i = 0; i < 10; i++) {
    samples.push((await processRss(pid))?.rss ?? 0);
    await sleep(1_000);
  }
  samples.sort((a, b) => a - b);
  return round(samples[samples.length / 2]! / 2 ** 20, 0);
}

const loadText = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
