// `npm run bench:dispatch [-- --runs=N] [-- --compare[=ROUNDS]] [-- --without=KEY] [-- --temporal-db=memory] [-- --verbose]`
// How long the Temporal dev server takes to hand tasks to an idle worker, with the service's
// server settings (runtime/temporal-server-config.ts). Runs one-activity workflows one after
// another on a fresh dev server started as `npm start` starts it, and prints the client latency,
// the scheduled → started gaps the server recorded, and Temporal's CPU per workflow.
// --compare alternates the service's settings with a stock dev server (or, with --without, with
// the service's settings minus one key), fresh servers each time, so both see the same machine
// load; on a shared machine compare medians and ratios, not single runs.
// docs/decisions/0019-temporal-dispatch.md has the setting, the numbers that justify it and the
// causes this probe ruled out.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { signal } from '../runtime/process';
import { ensureTemporalCli } from '../runtime/temporal-cli';
import { startTemporalDevServer } from '../runtime/temporal-dev-server';
import { TEMPORAL_DYNAMIC_CONFIG } from '../runtime/temporal-server-config';
import type { TemporalDynamicConfig } from '../runtime/temporal-server-config';
import type { DispatchActivities } from './dispatch-workflows';
import { processCpuMs } from './procfs';
import { round, summarise } from './stats';

const USAGE = `usage: npm run bench:dispatch [-- --runs=N] [-- --compare[=ROUNDS]] [-- --without=KEY] [-- --temporal-db=file|memory] [-- --verbose]
  --runs=N              workflows per server, one after another (default 40)
  --compare[=ROUNDS]    alternate the service's settings with a stock dev server, ROUNDS times each (default 3)
  --without=KEY         compare against the service's settings minus KEY instead of a stock server
  --temporal-db=memory  no SQLite file (npm start uses a file with WAL)
  --verbose             one line per workflow`;

const WORKFLOWS = fileURLToPath(new URL('./dispatch-workflows.ts', import.meta.url));
/** Runs before this are left out of the steady-state figures: the default cap's burst hides it. */
const WARM_UP = 10;
const EventType = proto.temporal.api.enums.v1.EventType;

interface Args {
  runs: number;
  rounds: number;
  compare: boolean;
  without: string | undefined;
  db: 'file' | 'memory';
  verbose: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { runs: 40, rounds: 1, compare: false, without: undefined, db: 'file', verbose: false };
  let rounds: number | undefined;
  for (const arg of argv) {
    const [name, value] = arg.split('=', 2) as [string, string | undefined];
    if (name === '--runs' && Number(value) > 0) args.runs = Number(value);
    else if (name === '--compare' && (value === undefined || Number(value) > 0)) {
      args.compare = true;
      if (value !== undefined) rounds = Number(value);
    } else if (name === '--without' && value !== undefined && value in TEMPORAL_DYNAMIC_CONFIG) {
      args.compare = true;
      args.without = value;
    } else if (arg === '--temporal-db=file' || arg === '--temporal-db=memory') args.db = value as 'file' | 'memory';
    else if (arg === '--verbose') args.verbose = true;
    else {
      const known = arg === '--help' || arg === '-h';
      const hint = name === '--without' ? `\nkeys: ${Object.keys(TEMPORAL_DYNAMIC_CONFIG).join(', ')}` : '';
      console.error(known ? USAGE : `bad argument ${arg}${hint}\n${USAGE}`);
      process.exit(known ? 0 : 2);
    }
  }
  if (args.compare) args.rounds = rounds ?? 3;
  return args;
}

interface Variant {
  name: string;
  config: TemporalDynamicConfig;
}

interface RunResult {
  variant: string;
  clientMs: number[];
  /** Scheduled → started of every workflow and activity task, per workflow. */
  gapsMs: number[][];
  temporalCpuMsPerWorkflow: number;
}

function tsMs(ts: proto.google.protobuf.ITimestamp | null | undefined): number {
  if (!ts) return Number.NaN;
  return Number(ts.seconds ?? 0) * 1000 + (ts.nanos ?? 0) / 1e6;
}

function dispatchGaps(events: proto.temporal.api.history.v1.IHistoryEvent[]): number[] {
  const gaps: number[] = [];
  let scheduled = Number.NaN;
  for (const e of events) {
    if (
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED ||
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    )
      scheduled = tsMs(e.eventTime);
    if (
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED ||
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    )
      gaps.push(tsMs(e.eventTime) - scheduled);
  }
  return gaps;
}

const stopOnExit = new Set<number>();
process.on('exit', () => {
  // The dev server has its own process group; never leave it behind, whatever ended the probe.
  for (const pid of stopOnExit) signal(-pid, 'SIGKILL');
});
for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(name, () => process.exit(130));

async function runOnce(
  variant: Variant,
  args: Args,
  cliPath: string,
  workflowBundle: WorkflowBundleWithSourceMap,
): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), 'dispatch-probe-'));
  try {
    const server = await startTemporalDevServer({
      cliPath,
      headless: true,
      dynamicConfig: variant.config,
      ...(args.db === 'file' ? { dbFile: join(dir, 'temporal.sqlite') } : {}),
    });
    stopOnExit.add(server.pid);
    try {
      const connection = await Connection.connect({ address: server.address });
      const native = await NativeConnection.connect({ address: server.address });
      const activities: DispatchActivities = { noop: async () => 1 };
      const worker = await Worker.create({
        connection: native,
        taskQueue: 'dispatch-probe',
        workflowBundle,
        activities,
      });
      const running = worker.run();
      try {
        return await measure(variant, args, new Client({ connection }), server.pid);
      } finally {
        worker.shutdown();
        await running;
        await native.close();
        await connection.close();
      }
    } finally {
      await server.stop();
      stopOnExit.delete(server.pid);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function measure(variant: Variant, args: Args, client: Client, serverPid: number): Promise<RunResult> {
  const result: RunResult = { variant: variant.name, clientMs: [], gapsMs: [], temporalCpuMsPerWorkflow: 0 };
  const cpuBefore = await processCpuMs(serverPid);
  for (let i = 0; i < args.runs; i++) {
    const t0 = performance.now();
    const handle = await client.workflow.start('oneActivity', {
      workflowId: `dispatch-${i}`,
      taskQueue: 'dispatch-probe',
    });
    await handle.result();
    result.clientMs.push(performance.now() - t0);
    result.gapsMs.push(dispatchGaps((await handle.fetchHistory()).events ?? []));
    if (args.verbose)
      console.log(
        `${variant.name} ${String(i).padStart(3)} ${result.clientMs[i]!.toFixed(1).padStart(7)} ms  gaps ${result.gapsMs[i]!.map((g) => g.toFixed(1)).join(' ')}`,
      );
  }
  // Reading the histories costs Temporal a little too; it is the same for every variant.
  result.temporalCpuMsPerWorkflow = ((await processCpuMs(serverPid)) - cpuBefore) / args.runs;
  return result;
}

function describeRun(r: RunResult): {
  p50: number;
  steadyP50: number;
  steadyP95: number;
  gapP50: number;
  gapP95: number;
  slowGaps: string;
  cpu: number;
} {
  const steady = r.clientMs.slice(Math.min(WARM_UP, Math.floor(r.clientMs.length / 2)));
  const gaps = r.gapsMs.flat();
  const gapStats = summarise(gaps);
  return {
    p50: round(summarise(r.clientMs).p50),
    steadyP50: round(summarise(steady).p50),
    steadyP95: round(summarise(steady).p95),
    gapP50: round(gapStats.p50),
    gapP95: round(gapStats.p95),
    slowGaps: `${gaps.filter((g) => g > 25).length}/${gaps.length}`,
    cpu: round(r.temporalCpuMsPerWorkflow),
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cliPath = await ensureTemporalCli({ env: process.env });
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS, logger: new DefaultLogger('WARN') });

  const service: Variant = { name: 'service', config: TEMPORAL_DYNAMIC_CONFIG };
  const other: Variant = args.without
    ? {
        name: `without ${args.without}`,
        config: Object.fromEntries(Object.entries(TEMPORAL_DYNAMIC_CONFIG).filter(([key]) => key !== args.without)),
      }
    : { name: 'stock', config: {} };
  const order = args.compare ? [other, service] : [service];

  const results: RunResult[] = [];
  console.log(
    `${args.runs} one-activity workflows per server, one after another; Temporal with ${args.db === 'file' ? 'a SQLite file (WAL)' : 'in-memory SQLite'}`,
  );
  console.log(
    'variant | client p50 | steady p50 / p95 | dispatch gap p50 / p95 | gaps > 25 ms | Temporal CPU/workflow (ms)',
  );
  for (let round_ = 0; round_ < args.rounds; round_++) {
    for (const variant of order) {
      const r = await runOnce(variant, args, cliPath, workflowBundle);
      results.push(r);
      const d = describeRun(r);
      console.log(
        `${r.variant} | ${d.p50} | ${d.steadyP50} / ${d.steadyP95} | ${d.gapP50} / ${d.gapP95} | ${d.slowGaps} | ${d.cpu}`,
      );
    }
  }
  if (!args.compare) return;

  const median = (values: number[]) => summarise(values).p50;
  const of = (name: string, pick: (d: ReturnType<typeof describeRun>) => number) =>
    median(results.filter((r) => r.variant === name).map((r) => pick(describeRun(r))));
  console.log(`\nmedian over ${args.rounds} rounds: ${service.name} / ${other.name}`);
  for (const [label, pick] of [
    ['steady client p50 (ms)', (d) => d.steadyP50],
    ['dispatch gap p50 (ms)', (d) => d.gapP50],
    ['Temporal CPU per workflow (ms)', (d) => d.cpu],
  ] as [string, (d: ReturnType<typeof describeRun>) => number][]) {
    const a = of(service.name, pick);
    const b = of(other.name, pick);
    const perRound = results
      .filter((r) => r.variant === service.name)
      .map((r, i) =>
        round(pick(describeRun(r)) / pick(describeRun(results.filter((o) => o.variant === other.name)[i]!)), 2),
      );
    console.log(`  ${label}: ${a} / ${b} = ${round(a / b, 2)} (per round: ${perRound.join(', ')})`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
