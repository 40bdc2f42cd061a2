// `npm run bench [-- --quick] [-- --worker=child] [-- --temporal-db=memory] [-- --keep]`: starts
// the whole service on free ports in a private folder, measures it over real HTTP, prints a table
// and writes JSON under .test-data/bench-results/, and stops everything it started (also on error,
// Ctrl-C and SIGKILL, see deploy/processes/reaper.mjs). docs/benchmark.md explains the scenarios and numbers.
import { temporalServerMissing } from '../scripts/temporal-server';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { createShutdown } from '../runtime/lifecycle';
import { isAlive } from '../runtime/process';
import { cpuBetween, cpuSnapshot } from './cpu';
import type { CpuUse } from './cpu';
import { guardRun } from './harness';
import { createErrorLog, createHttp } from './http';
import { startMemorySampler } from './memory';
import type { MemoryReport } from './memory';
import { runIdle } from './idle';
import { runStartup } from './startup';
import { runPeers } from './peers-run';
import { runBatches } from './batches';
import { runUpstreamVideos } from './upstream-videos';
import { profileKind, workflowIdsOf } from './profile';
import type { KindProfile } from './profile';
import { comparisonRows, evaluateTargets, flatMetrics, renderReport } from './report';
import { writeResults } from './results';
import {
  floorConcurrent,
  floorSequential,
  refImageConcurrent,
  refImageSequential,
  refInflight,
  refRefusal,
  refVideo,
  shapeImageConcurrent,
  shapeVideoConcurrent,
  floorTimerConcurrent,
} from './reference-scenarios';
import { waitUntilIdle } from './cpu-breakdown';
import { openWalReader } from './wal';
import {
  baseline,
  chatSequential,
  imageConcurrent,
  imageSequential,
  inflightVideos,
  refusal,
  videoFifo,
  videoSequential,
  videoSpread,
} from './scenarios';
import type { Context, ScenarioResult } from './scenarios';
import { measureSimulatorCost } from './simulator-cost';
import { FULL, QUICK } from './sizes';
import { liveScenarios, renderLive } from './live';
import { createStack } from './stack';
import {
  refusedCut,
  renderStream,
  STREAM_MODEL,
  streamMetrics,
  streamOverhead,
  UPSTREAM_MODEL,
  wholeReply,
} from './stream';
import { startOpenAiUpstream } from '../test/support/upstream-servers';
import type { Stack, Topology, WorkerMode } from './stack';

const USAGE = `usage: npm run bench [-- --quick] [-- --only=core|live|stream|inflight|peers|idle|startup|upstream-videos|batches] [-- --topology=dev|cluster [-- --history-shards=N]] [-- --videos=N] [-- --per-account=N] [-- --profile] [-- --worker=process|in-process|child] [-- --temporal-db=file|memory] [-- --keep]
  --quick               smaller run to check that the bench works
  --only=core           only the paired image, video and 402 scenarios: the headline ratios without in-flight memory or streams (about five minutes)
  --only=live           only the ETA's error on the simulator and the cost of 1,000 open event streams (about two minutes)
  --only=stream         only the streamed-chat overhead against the upstream directly (about a minute)
  --only=inflight       only the memory with 1,000 videos held in flight, service and reference (about three minutes)
  --only=upstream-videos  only 1,000 upstream videos (--videos=N) in flight for minutes on a fal-like queue that calls back: the provider worker's slots in use and RSS over time, idle first (about six minutes); --per-account=N videos per account (5; also VIDEO_CONCURRENCY), 100 queues each account's videos behind its FIFO slot claims
  --only=batches        only a 10,000-line chat batch and a 1,000-line image batch through the openai SDK, the API and the worker as two processes: time to admit, lines per second, another account's single requests meanwhile as a ratio to the same without a batch, RSS of each (about half an hour on two busy cores; --quick: 1,000 and 200 lines, about three minutes)
  --only=peers          only the chat path beside LiteLLM's proxy and the upstream directly (about six minutes; installs LiteLLM once)
  --only=idle           only CPU per chat one at a time, then what the stack burns with nothing to do, by process tree, 5 s window, process and thread (about three minutes); with --profile, V8 profiles of the service too
  --only=startup        only the start-up of an API process and a workflow worker, compiled (dist/) against the TypeScript sources (tsx), in turns: spawn to /health 200, spawn to the first workflow task polled, idle RSS (about five minutes)
  --profile             with --only=peers: instead of the tables, where each one's CPU goes under 20 clients (V8's profiler for us, py-spy for LiteLLM; about two minutes)
  --worker=process      (default) the service as one process, runtime/main.ts compiled (npm run build, done first when the sources changed); the bench only drives load
  --worker=in-process   API and worker inside the bench process
  --worker=child        the API inside the bench process, the worker as its own process (runtime/worker-process.ts, compiled)
  --topology=cluster    with --only=core or --only=peers: the Temporal server as npm run cluster runs it (PostgreSQL
                        persistence and SQL visibility), its databases on a PostgreSQL of their own; default dev: the
                        CLI's dev server with its SQLite file, as npm start runs it
  --history-shards=N    with --topology=cluster: the Temporal server's history shards (default 4)
  --temporal-db=memory  Temporal dev server without its SQLite file (npm start uses a file)
  --keep                keep the bench's data folder (.test-data/bench-<pid>) for inspection`;

type Only = 'core' | 'live' | 'stream' | 'inflight' | 'peers' | 'idle' | 'startup' | 'upstream-videos' | 'batches';

function parseArgs(argv: string[]): {
  quick: boolean;
  workerMode: WorkerMode;
  temporalDb: 'file' | 'memory';
  topology: Topology;
  /** The Temporal server's history shards (topology cluster; default 4). */
  historyShards?: number;
  keep: boolean;
  profile: boolean;
  only?: Only;
  videos?: number;
  perAccount?: number;
} {
  let quick = false;
  let videos: number | undefined;
  let perAccount: number | undefined;
  let profile = false;
  let only: Only | undefined;
  let workerMode: WorkerMode = 'process';
  let temporalDb: 'file' | 'memory' = 'file';
  let topology: Topology = 'dev';
  let historyShards: number | undefined;
  let keep = false;
  for (const arg of argv) {
    if (arg === '--quick') quick = true;
    else if (
      arg === '--only=core' ||
      arg === '--only=live' ||
      arg === '--only=stream' ||
      arg === '--only=inflight' ||
      arg === '--only=peers' ||
      arg === '--only=idle' ||
      arg === '--only=startup' ||
      arg === '--only=upstream-videos' ||
      arg === '--only=batches'
    )
      only = arg.slice('--only='.length) as Only;
    else if (/^--videos=[1-9]\d{0,4}$/.test(arg)) videos = Number(arg.slice('--videos='.length));
    else if (/^--per-account=([1-9]\d?|100)$/.test(arg)) perAccount = Number(arg.slice('--per-account='.length));
    else if (arg === '--keep') keep = true;
    else if (arg === '--profile') profile = true;
    else if (arg === '--worker=child' || arg === '--worker=in-process' || arg === '--worker=process')
      workerMode = arg.slice('--worker='.length) as WorkerMode;
    else if (arg === '--temporal-db=file' || arg === '--temporal-db=memory')
      temporalDb = arg.slice('--temporal-db='.length) as 'file' | 'memory';
    else if (arg === '--topology=dev' || arg === '--topology=cluster')
      topology = arg.slice('--topology='.length) as Topology;
    else if (/^--history-shards=[1-9]\d{0,4}$/.test(arg)) historyShards = Number(arg.slice('--history-shards='.length));
    else {
      console.error(arg === '--help' || arg === '-h' ? USAGE : `unknown argument ${arg}\n${USAGE}`);
      process.exit(arg === '--help' || arg === '-h' ? 0 : 2);
    }
  }
  if (profile && only !== 'peers' && only !== 'idle') {
    console.error(`--profile goes with --only=peers or --only=idle\n${USAGE}`);
    process.exit(2);
  }
  if (topology === 'cluster' && only !== 'core' && only !== 'peers') {
    console.error(`--topology=cluster goes with --only=core or --only=peers\n${USAGE}`);
    process.exit(2);
  }
  if (historyShards !== undefined && topology !== 'cluster') {
    console.error(`--history-shards goes with --topology=cluster (the dev server has one shard)\n${USAGE}`);
    process.exit(2);
  }
  if ((videos !== undefined || perAccount !== undefined) && only !== 'upstream-videos') {
    console.error(`--videos and --per-account go with --only=upstream-videos\n${USAGE}`);
    process.exit(2);
  }
  return {
    quick,
    workerMode,
    temporalDb,
    topology,
    ...(historyShards === undefined ? {} : { historyShards }),
    keep,
    profile,
    ...(only ? { only } : {}),
    ...(videos === undefined ? {} : { videos }),
    ...(perAccount === undefined ? {} : { perAccount }),
  };
}

const log = (line: string) => console.error(`[bench] ${line}`);
/** A scenario's tail (workflows finishing after the last answer) is counted for this long at most. */
const DRAIN_LIMIT_MS = 60_000;
/** Clients of the video's shape and its floor: as many as the image's first level. */
const SHAPE_CLIENTS = 20;

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.topology === 'cluster') {
    // Before anything starts: the server the cluster topology runs, built or buildable.
    const missing = await temporalServerMissing();
    if (missing) {
      console.error(`[bench] ${missing}`);
      return 1;
    }
  }
  if (args.only === 'upstream-videos') return runUpstreamVideos(args);
  if (args.only === 'batches') return runBatches(args);
  if (args.only === 'peers') {
    // Per process tree: the service must be its own process.
    if (args.workerMode !== 'process') {
      console.error(
        `--only=peers runs the service as its own process; --worker=${args.workerMode} does not apply\n${USAGE}`,
      );
      return 2;
    }
    return runPeers(args);
  }
  if (args.only === 'startup') return runStartup(args);
  if (args.only === 'idle')
    return runIdle({
      keep: args.keep,
      temporalDb: args.temporalDb,
      seconds: args.quick ? 10 : 60,
      profile: args.profile,
    });
  const sizes = args.quick ? QUICK : FULL;
  const mode = args.quick ? 'quick' : 'full';
  const dataDir = join(process.cwd(), '.test-data', `bench-${process.pid}`);
  // The streamed-chat scenario's upstream: an OpenAI-compatible server on loopback, configured as
  // the chat model's upstream exactly as an operator would (UPSTREAMS_JSON).
  const upstream = await startOpenAiUpstream();
  const upstreams = {
    upstreams: [
      {
        name: 'bench-upstream',
        protocol: 'openai',
        baseUrl: upstream.baseUrl,
        models: { [STREAM_MODEL]: UPSTREAM_MODEL },
      },
    ],
  };
  const stackHandle = createStack({
    dataDir,
    workerMode: args.workerMode,
    temporalDb: args.temporalDb,
    topology: args.topology,
    ...(args.historyShards === undefined ? {} : { historyShards: args.historyShards }),
    keepData: args.keep,
    log,
    env: { UPSTREAMS_JSON: JSON.stringify(upstreams) },
  });

  // Ctrl-C, SIGTERM or the parent (npm) going away: abort the requests in flight, stop what was
  // started, then exit non-zero (bench/harness.ts).
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  shutdown.add('stream upstream', () => upstream.close());
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: args.quick ? 8 : 20,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });

  const errors = createErrorLog();
  let stack: Stack | undefined;
  let exitCode = 0;
  const startedAt = Date.now();
  try {
    log(
      `${mode} run, worker ${args.workerMode}, ${args.topology === 'cluster' ? `Temporal server on PostgreSQL, ${args.historyShards ?? 4} history shards` : `Temporal dev server, persistence ${args.temporalDb}`}, data in ${dataDir}`,
    );
    stack = await stackHandle.start();
    log(`Temporal: the ${stack.temporal.kind} (${stack.temporalCli})`);
    const s = stack;
    const wal = {
      ours: await openWalReader(s.postgres.urlFor('postgres')),
      temporal: s.temporalDb ? await openWalReader(s.temporalDb.postgres.urlFor('postgres')) : undefined,
    };
    shutdown.add('WAL readers', async () => {
      await wal.ours.close();
      await wal.temporal?.close();
    });
    log(
      `service up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (${Object.entries(stack.startup)
        .map(([k, v]) => `${k} ${v} ms`)
        .join(', ')}); API ${stack.baseUrl}`,
    );

    const simulatorCost = await measureSimulatorCost();
    log(
      `the task itself per run (render + store, sim:delay=0): image ${simulatorCost.image.cpuMs} ms CPU, video ${simulatorCost.video.cpuMs} ms CPU, chat ${simulatorCost.chat.cpuMs} ms CPU`,
    );

    const reference = stack.reference;
    if (!reference) throw new Error('the stack started without its bare reference');
    const memory = startMemorySampler({
      everyMs: 100,
      temporalPid: stack.temporal.pid,
      postgresPid: stack.postgres.pid,
      referencePid: reference.pid,
      serviceInBench: stack.serviceInBench,
      ...(stack.workerPid === undefined ? {} : { workerPid: stack.workerPid }),
    });
    const before = await memory.now();
    const pids = {
      temporal: stack.temporal.pid,
      postgres: stack.postgres.pid,
      temporalDb: stack.temporalDb?.postgres.pid,
      reference: reference.pid,
      ...(stack.workerPid === undefined ? {} : { worker: stack.workerPid }),
    };
    const trees = [pids.temporal, pids.postgres, pids.reference, pids.temporalDb, stack.workerPid].filter(
      (pid): pid is number => pid !== undefined,
    );
    let lastCpu: CpuUse | undefined;
    let lastWal: ScenarioResult['wal'];
    const ctx: Context = {
      http: createHttp(stack.baseUrl, interrupt.signal),
      ref: createHttp(reference.baseUrl, interrupt.signal),
      stack,
      errors,
      sizes,
      memory,
      log,
      samples: { image: [], chat: [], video: [], refused: [], refImage: [] },
      async measure(work) {
        const marks = async () => ({ ours: await wal.ours.mark(), temporal: await wal.temporal?.mark() });
        const w0 = await marks();
        const a = await cpuSnapshot(pids);
        try {
          return await work();
        } finally {
          // What the work left behind (a workflow's last task, Temporal's transfer and visibility
          // tasks) is its cost too: counted until the stack is idle again.
          await waitUntilIdle(trees, DRAIN_LIMIT_MS);
          lastCpu = cpuBetween(a, await cpuSnapshot(pids));
          const w1 = await marks();
          lastWal = {
            ours: await wal.ours.between(w0.ours, w1.ours),
            ...(wal.temporal && w0.temporal && w1.temporal
              ? { temporal: await wal.temporal.between(w0.temporal, w1.temporal) }
              : {}),
          };
        }
      },
    };
    const loadBefore = loadavg();

    const scenarios: ScenarioResult[] = [];
    const run = async (name: string, scenario: () => Promise<ScenarioResult>) => {
      memory.phase(name);
      const t = Date.now();
      if (interrupt.signal.aborted) throw new Error('interrupted');
      log(`${name}…`);
      lastCpu = undefined;
      lastWal = undefined;
      const r = await scenario();
      if (lastCpu) r.cpu = lastCpu;
      if (lastWal) r.wal = lastWal;
      log(
        `${name}: p50 ${r.latency.p50.toFixed(1)} ms, p95 ${r.latency.p95.toFixed(1)} ms${r.errors ? `, ${r.errors} errors` : ''} (${((Date.now() - t) / 1000).toFixed(1)} s)`,
      );
      scenarios.push(r);
    };
    if (!args.only || args.only === 'core') {
      // Each of the service's scenarios is followed at once by the bare reference's (same sizes,
      // same clients), so that both meet the same load from the machine's other users.
      await run('baseline', () => baseline(ctx));
      await run('image.sequential', () => imageSequential(ctx));
      await run('ref.image.sequential', () => refImageSequential(ctx));
      await run('floor.sequential', () => floorSequential(ctx));
      for (const c of sizes.imageConcurrent.levels) {
        await run(`image.c${c}`, () => imageConcurrent(ctx, c));
        await run(`ref.image.c${c}`, () => refImageConcurrent(ctx, c));
        // Temporal's floor, and our image's workflow with nothing else around it, on the same server.
        await run(`floor.c${c}`, () => floorConcurrent(ctx, c));
        await run(`shape.image.c${c}`, () => shapeImageConcurrent(ctx, c));
      }
      await run('video.c1', () => videoSequential(ctx));
      await run('ref.video.c1', () => refVideo(ctx, 1));
      await run(`video.c${sizes.videoSpread.concurrency}`, () => videoSpread(ctx));
      await run(`ref.video.c${sizes.videoSpread.concurrency}`, () => refVideo(ctx, sizes.videoSpread.concurrency));
      // A video's workflow alone beside the floor with a timer, on the same server.
      await run(`floor.timer.c${SHAPE_CLIENTS}`, () => floorTimerConcurrent(ctx, SHAPE_CLIENTS));
      await run(`shape.video.c${SHAPE_CLIENTS}`, () => shapeVideoConcurrent(ctx, SHAPE_CLIENTS));
      await run('video.fifo', () => videoFifo(ctx));
      await run('chat.sequential', () => chatSequential(ctx));
      await run('refusal.402', () => refusal(ctx));
      await run('ref.refusal.402', () => refRefusal(ctx));
    }
    if (!args.only || args.only === 'inflight') {
      const rate = (id: string) => {
        const s = scenarios.find((x) => x.id === id);
        return s ? (s.n / s.wallMs) * 1000 : undefined;
      };
      await run('inflight', () => inflightVideos(ctx, rate(`video.c${sizes.videoSpread.concurrency}`)));
      await run('ref.inflight', () => refInflight(ctx, rate(`ref.video.c${sizes.videoSpread.concurrency}`)));
    }
    const streamScenarios = async () => {
      memory.phase('stream');
      log('stream (service against the upstream directly)…');
      const rows = await streamOverhead(ctx, upstream.baseUrl, sizes.stream);
      for (const r of rows) {
        log(
          `stream ${r.mode} c${r.concurrency}: first byte overhead p50 ${r.overhead.ttfb.p50} ms, p99 ${r.overhead.ttfb.p99} ms; full reply overhead p50 ${r.overhead.full.p50} ms, p99 ${r.overhead.full.p99} ms`,
        );
      }
      const cut = await refusedCut(ctx, upstream, 20);
      log(
        `stream refused after all (${cut.rounds} races): the refused call's upstream request closed after p50 ${cut.cutMs.p50.toFixed(1)} ms, max ${cut.cutMs.max.toFixed(1)} ms ` +
          `(${cut.neverSent} never sent) = ${cut.ratio} × the admitted one's first byte (p50 ${cut.servedTtfb.p50.toFixed(1)} ms)`,
      );
      return rows;
    };
    const live = !args.only || args.only === 'live' ? await liveScenarios(ctx) : undefined;
    const noStream = args.only !== undefined && args.only !== 'stream';
    const stream = noStream ? [] : await streamScenarios();
    const whole = noStream ? undefined : await wholeReply(ctx, Math.min(50, sizes.stream.n), sizes.stream.tokens);
    if (whole)
      log(
        `whole reply: API path p50 ${whole.apiPath.p50.toFixed(1)} ms, activity path p50 ${whole.activityPath.p50.toFixed(1)} ms`,
      );
    memory.phase('after');
    const after = await memory.now();
    const memoryReport: MemoryReport = await memory.stop();

    log('reading Temporal histories for the profile…');
    const last = <T>(list: T[]) => list.slice(-sizes.profile);
    const refusedAccount = scenarios.find((s) => s.id === 'refusal.402')?.accountId;
    const refusedIds = refusedAccount ? await workflowIdsOf(stack.client, refusedAccount, sizes.profile) : [];
    const profile: Record<string, KindProfile | undefined> = {
      image: await profileKind(stack.client, last(ctx.samples.image)),
      'image (reference)': await profileKind(stack.client, last(ctx.samples.refImage)),
      chat: await profileKind(stack.client, last(ctx.samples.chat)),
      video: await profileKind(stack.client, last(ctx.samples.video), 'start'),
      refused: await profileKind(
        stack.client,
        refusedIds.map((id) => ({ id })),
      ),
    };

    const metrics = {
      ...flatMetrics(scenarios, memoryReport, simulatorCost, stack.serviceInBench),
      ...streamMetrics(stream),
    };
    const targets = evaluateTargets(metrics);
    const comparison = comparisonRows(metrics, targets);
    const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
    console.log(
      `\nBenchmark (${mode}) — ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, worker ${args.workerMode}, ${args.topology === 'cluster' ? `Temporal server on PostgreSQL, ${args.historyShards ?? 4} history shards` : `Temporal dev server, persistence ${args.temporalDb}`}`,
    );
    console.log(
      `load average before ${load(loadBefore)}, after ${load(loadavg())} (other processes' CPU use shows in the CPU table as 'other')\n`,
    );
    console.log(
      renderReport({
        scenarios,
        targets,
        memory: memoryReport,
        before,
        after,
        profile,
        workerMode: args.workerMode,
        simulatorCost,
        comparison,
      }),
    );
    if (whole) console.log(`\n${renderStream(stream, whole)}`);
    if (live) console.log(`\n${renderLive(live)}`);

    const misses = targets.filter((t) => t.verdict === 'MISS');
    const json = JSON.stringify(
      {
        mode,
        workerMode: args.workerMode,
        topology: args.topology,
        historyShards: args.topology === 'cluster' ? (args.historyShards ?? 4) : 1,
        temporal: stack.temporal.kind,
        temporalDb: args.temporalDb,
        date: new Date().toISOString(),
        machine: {
          cpus: availableParallelism(),
          cpuModel: cpus()[0]?.model,
          memoryMb: Math.round(totalmem() / 2 ** 20),
          node: process.version,
          loadAverageBefore: loadBefore,
          loadAverageAfter: loadavg(),
        },
        temporalCli: stack.temporalCli,
        startupMs: stack.startup,
        simulatorCost,
        sizes,
        scenarios,
        stream,
        wholeReply: whole,
        live,
        metrics,
        targets,
        comparison,
        memory: { before, after, ...memoryReport },
        profile,
        errors: { count: errors.count, first: errors.messages },
        durationMs: Date.now() - startedAt,
      },
      null,
      2,
    );
    const latest = await writeResults(
      json,
      `${args.only ? `${args.only}-` : ''}${mode}-${args.workerMode}-${args.topology === 'cluster' ? 'cluster' : args.temporalDb}`,
    );

    console.log(`\nResults: ${latest}`);
    console.log(
      errors.count > 0
        ? `SERVICE ERRORS: ${errors.count} unexpected answers (see below); exit code 1.`
        : misses.length > 0
          ? `Summary: ${targets.length - misses.length}/${targets.length} targets met; MISS: ${misses.map((m) => m.metric).join(', ')} (reported, not fatal).`
          : `Summary: all ${targets.length} targets met.`,
    );
  } catch (err) {
    if (interrupt.signal.aborted) errors.record('interrupted');
    else errors.record(`bench aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  } finally {
    log('stopping the service…');
    await shutdown.stop();
    const started = stack
      ? [stack.temporal.pid, stack.postgres.pid, ...(stack.workerPid === undefined ? [] : [stack.workerPid])]
      : [];
    const alive = started.filter((pid) => isAlive(pid));
    if (alive.length > 0) errors.record(`processes still alive after stopping: ${alive.join(', ')}`);
    else if (started.length > 0)
      log(
        `stopped (Temporal pid ${stack!.temporal.pid}, PostgreSQL pid ${stack!.postgres.pid}${stack!.workerPid ? `, worker pid ${stack!.workerPid}` : ''}); ${args.keep ? `data kept in ${dataDir}` : 'data folder removed'}`,
      );
  }
  if (errors.count > 0) {
    for (const m of errors.messages) console.error(`  error: ${m}`);
    exitCode = 1;
  }
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
