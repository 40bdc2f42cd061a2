// `npm run bench -- --only=peers [--quick] [--keep] [--temporal-db=memory] [--topology=cluster]`: our
// chat path beside LiteLLM's proxy and the upstream itself, and beside Temporal's floor on the same
// server. Starts the stack (the dev server, or with --topology=cluster the Temporal server on
// PostgreSQL) with the reference process (its floor and our chat's workflow alone), LiteLLM from
// its cached environment (bench/litellm.ts) and one local OpenAI-compatible upstream that both
// use, measures them interleaved (bench/peers.ts), prints the tables with ratios and the goals
// (bench/peers-report.ts), writes JSON and stops everything it started.
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createShutdown } from '../runtime/lifecycle';
import { isAlive } from '../runtime/process';
import { startOpenAiUpstream } from '../test/support/upstream-servers';
import { guardRun } from './harness';
import { createErrorLog, createHttp, openAccount } from './http';
import type { BenchAccount } from './http';
import { ensureLitellm, LITELLM_VERSION, startLitellm } from './litellm';
import type { LitellmInstall, LitellmProxy } from './litellm';
import { ensurePySpy, pySpyBreakdown, recordPySpy, v8Breakdown } from './cpu-breakdown';
import { profiledSegment, renderAreas, scaleShares } from './peers-profile';
import type { ProfiledSegment } from './peers-profile';
import { createPeer, createReference, idleCpu, laneKeys, loadRounds, sequentialRounds, startPssSampler } from './peers';
import type { LoadTarget, Peer, Recorder, Trees, WalReaders } from './peers';
import type { Topology } from './stack';
import { openWalReader } from './wal';
import { evaluateGoals, overheadShare, renderPeers } from './peers-report';
import type { PeersPass } from './peers-report';
import { writeResults } from './results';
import { createStack } from './stack';
import type { Stack } from './stack';
import { STREAM_MODEL, UPSTREAM_MODEL } from './stream';

/** How much each part does. Full: about 6 minutes on 2 cores once installed; quick: about 3. */
const SIZES = {
  full: {
    warmup: 30,
    idleSeconds: 10,
    rounds: 300,
    load: [20, 100],
    loadRounds: 3,
    sliceMs: 4_000,
    realisticRounds: 12,
    realisticLoad: [20, 100],
    realisticSliceMs: 6_000,
  },
  quick: {
    warmup: 10,
    idleSeconds: 5,
    rounds: 60,
    load: [20, 100],
    loadRounds: 1,
    sliceMs: 2_500,
    realisticRounds: 4,
    realisticLoad: [20],
    realisticSliceMs: 4_000,
  },
};
/** Most requests in one slice: the upstream alone answers thousands a second. */
const SLICE_CAP = 50_000;
const TOKENS = 32;
/** Instant: the upstream answers 32 tokens with no latency of its own. */
const FAST = `say something up:tokens=${TOKENS}`;
/** Realistic: 300 ms to the first token, then 50 tokens a second. */
const REALISTIC = `say something up:tokens=${TOKENS} up:first=300 up:pace=20`;
/** Each sequential round's time bound; a round takes ~0.1 s fast and ~6 s realistic. */
const ROUNDS_DEADLINE_MS = { fast: 120_000, realistic: 150_000 };

const log = (line: string) => console.error(`[bench] ${line}`);
const PROFILE_CLIENTS = 20;
const PROFILE_SECONDS = 15;

export async function runPeers(args: {
  quick: boolean;
  keep: boolean;
  temporalDb: 'file' | 'memory';
  topology: Topology;
  historyShards?: number;
  profile: boolean;
}): Promise<number> {
  const size = args.quick ? SIZES.quick : SIZES.full;
  const mode = args.quick ? 'quick' : 'full';
  const dataDir = join(process.cwd(), '.test-data', `bench-${process.pid}`);
  const startedAt = Date.now();
  const install = await ensureLitellm(process.env, (line) => log(`litellm: ${line}`));

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
  // V8 writes one profile per JS thread of the service when it exits; the bench cuts them to the load's window.
  const profileDir = `${dataDir}-cpu`;
  const stackHandle = createStack({
    dataDir,
    workerMode: 'process',
    temporalDb: args.temporalDb,
    topology: args.topology,
    ...(args.historyShards === undefined ? {} : { historyShards: args.historyShards }),
    keepData: args.keep,
    log,
    env: { UPSTREAMS_JSON: JSON.stringify(upstreams) },
    ...(args.profile ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  });
  let profiled: Awaited<ReturnType<typeof profileTargets>> | undefined;
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  let litellm: LitellmProxy | undefined;
  let wal: WalReaders | undefined;
  shutdown.add('upstream', () => upstream.close());
  shutdown.add('WAL readers', async () => {
    await wal?.ours.close();
    await wal?.temporal?.close();
  });
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('LiteLLM', async () => litellm?.stop(10_000));
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: args.quick ? 8 : 15,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });

  const errors = createErrorLog();
  const rec: Recorder = {
    fail(what, err) {
      if (interrupt.signal.aborted) throw new Error('interrupted');
      errors.record(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    },
  };
  let stack: Stack | undefined;
  try {
    log(
      `peers, ${mode} run, ${args.topology === 'cluster' ? `Temporal server on PostgreSQL, ${args.historyShards ?? 4} history shards` : `Temporal dev server, persistence ${args.temporalDb}`}, data in ${dataDir}`,
    );
    stack = await stackHandle.start();
    const s = stack;
    wal = {
      ours: await openWalReader(s.postgres.urlFor('postgres')),
      temporal: s.temporalDb ? await openWalReader(s.temporalDb.postgres.urlFor('postgres')) : undefined,
    };
    log(`service up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; API ${s.baseUrl}`);
    litellm = await startLitellm({
      install,
      dir: join(dataDir, 'litellm'),
      upstreamBaseUrl: upstream.baseUrl,
      model: STREAM_MODEL,
      upstreamModel: UPSTREAM_MODEL,
      onSpawn: (pid) => s.watch('litellm', pid),
    });
    log(`LiteLLM ${LITELLM_VERSION} up (${install.python}); ${litellm.baseUrl}`);

    // Our keys: one account for the sequential rounds, one per client lane (each account's holds
    // and settles take turns on its balance row, by design), each with keys enough that no key
    // nears its plan's rate limit (600 a minute).
    const http = createHttp(s.baseUrl, interrupt.signal);
    const account = (requests: number) => openAccount(http, s.adminToken, { credits: 1_000_000_000, requests });
    const sequential = await account(2 * (size.rounds + size.warmup) + 200);
    const lanes: BenchAccount[] = [];
    for (let i = 0; i < Math.max(...size.load, ...size.realisticLoad); i++) lanes.push(await account(1_350));
    const ours = laneKeys(sequential, lanes);
    const peers: Peer[] = [
      createPeer('direct', createHttp(upstream.baseUrl, interrupt.signal), {
        path: '/chat/completions',
        model: UPSTREAM_MODEL,
        key: () => undefined,
        extra: { stream_options: { include_usage: true } },
      }),
      createPeer('litellm', createHttp(litellm.baseUrl, interrupt.signal), {
        path: '/v1/chat/completions',
        model: STREAM_MODEL,
        key: () => litellm!.masterKey,
      }),
      createPeer('us', http, { path: '/v1/chat/completions', model: STREAM_MODEL, key: ours }),
    ];
    const trees: Trees = {
      litellm: litellm.pid,
      service: s.workerPid!,
      temporal: s.temporal.pid,
      temporalDb: s.temporalDb?.postgres.pid,
      postgres: s.postgres.pid,
      reference: s.reference!.pid,
    };
    const refHttp = createHttp(s.reference!.baseUrl, interrupt.signal);
    const references: LoadTarget[] = [
      createReference('floor', refHttp, '/floor'),
      createReference('shape', refHttp, '/shape/chat'),
    ];
    const memory = startPssSampler(trees);
    const loadBefore = loadavg();

    log(`warm-up: ${size.warmup} rounds`);
    await sequentialRounds(peers, size.warmup, FAST, rec, performance.now() + 60_000);
    if (args.profile) {
      profiled = await profileTargets({ peers, trees, install, dataDir, stop: interrupt.signal });
      return errors.count > 0 ? 1 : 0;
    }
    log(`idle: ${size.idleSeconds} s with nothing to do`);
    const idle = await idleCpu(trees, size.idleSeconds);

    const pass = async (
      name: 'fast' | 'realistic',
      upstreamText: string,
      prompt: string,
      rounds: number,
      levels: number[],
      loadRoundCount: number,
      sliceMs: number,
      targets: LoadTarget[],
    ): Promise<PeersPass> => {
      const t = Date.now();
      log(`${name}: ${rounds} rounds of whole and streamed replies, interleaved`);
      const seq = await sequentialRounds(peers, rounds, prompt, rec, performance.now() + ROUNDS_DEADLINE_MS[name]);
      log(
        `${name}: whole overhead p50 LiteLLM ${seq.wholeOverhead.litellm.p50.toFixed(1)} ms, us ${seq.wholeOverhead.us.p50.toFixed(1)} ms; first content overhead p50 LiteLLM ${seq.contentOverhead.litellm.p50.toFixed(1)}, us ${seq.contentOverhead.us.p50.toFixed(1)} (${seq.rounds} rounds)`,
      );
      const load: PeersPass['load'] = {};
      for (const c of levels) {
        log(`${name}: ${c} clients, ${loadRoundCount} round(s) of ${sliceMs / 1000} s each`);
        load[String(c)] = await loadRounds(
          targets,
          {
            concurrency: c,
            rounds: loadRoundCount,
            sliceMs,
            cap: SLICE_CAP,
            prompt,
            trees,
            stop: interrupt.signal,
            wal,
          },
          rec,
        );
        const r = load[String(c)]!;
        log(
          `${name}: ${c} clients: ${Object.entries(r)
            .map(([k, v]) => `${k} ${v.perSecond}/s`)
            .join(', ')}`,
        );
      }
      log(`${name} pass: ${((Date.now() - t) / 1000).toFixed(0)} s`);
      return { upstream: upstreamText, prompt, sequential: seq, load };
    };
    const fast = await pass(
      'fast',
      `${TOKENS} tokens, no latency of its own`,
      FAST,
      size.rounds,
      size.load,
      size.loadRounds,
      size.sliceMs,
      [...peers, ...references],
    );
    const realistic = await pass(
      'realistic',
      `${TOKENS} tokens, 300 ms to the first, then 50 a second`,
      REALISTIC,
      size.realisticRounds,
      size.realisticLoad,
      1,
      size.realisticSliceMs,
      peers,
    );
    const figures = { fast, realistic, idle, memory: await memory.stop(), temporal: s.temporal.kind };
    const goals = evaluateGoals(figures);

    const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
    console.log(
      `\nPeers (${mode}) — ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, LiteLLM ${LITELLM_VERSION} (Python ${install.pythonVersion}, 1 worker, no database)`,
    );
    console.log(
      `load average before ${load(loadBefore)}, after ${load(loadavg())}; other people's processes share this machine\n`,
    );
    console.log(renderPeers(figures, goals));
    const json = JSON.stringify(
      {
        mode,
        only: 'peers',
        topology: args.topology,
        historyShards: args.topology === 'cluster' ? (args.historyShards ?? 4) : 1,
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
        litellm: {
          version: LITELLM_VERSION,
          python: install.pythonVersion,
          dir: install.dir,
          workers: 1,
          database: false,
        },
        temporalCli: s.temporalCli,
        sizes: size,
        ...figures,
        realisticOverheadSharePct: overheadShare(realistic),
        goals,
        errors: { count: errors.count, first: errors.messages },
        durationMs: Date.now() - startedAt,
      },
      null,
      2,
    );
    const latest = await writeResults(json, `peers-${args.topology}-${mode}`);
    const misses = goals.filter((g) => g.verdict !== 'met');
    console.log(`\nResults: ${latest}`);
    console.log(
      errors.count > 0
        ? `ERRORS: ${errors.count} unexpected answers (see below); exit code 1.`
        : misses.length > 0
          ? `Summary: ${goals.length - misses.length}/${goals.length} goals met; not met: ${misses.map((m) => m.goal).join('; ')} (reported, not fatal).`
          : `Summary: all ${goals.length} goals met.`,
    );
  } catch (err) {
    errors.record(
      interrupt.signal.aborted
        ? 'interrupted'
        : `bench aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
  } finally {
    log('stopping…');
    await shutdown.stop();
    const started = [
      stack?.temporal.pid,
      stack?.postgres.pid,
      stack?.temporalDb?.postgres.pid,
      stack?.reference?.pid,
      stack?.workerPid,
      litellm?.pid,
    ].filter((p): p is number => p !== undefined);
    const alive = started.filter((pid) => isAlive(pid));
    if (alive.length > 0) errors.record(`processes still alive after stopping: ${alive.join(', ')}`);
    else
      log(
        `stopped everything (${started.length} processes) after ${((Date.now() - startedAt) / 1000).toFixed(0)} s; ${args.keep ? `data kept in ${dataDir}` : 'data folder removed'}`,
      );
    // The service has exited: its V8 profiles are written.
    if (profiled) await reportProfile(profiled, { profileDir, keep: args.keep });
  }
  for (const m of errors.messages) console.error(`  error: ${m}`);
  return errors.count > 0 ? 1 : 0;
}

/** Each target alone under 20 clients, profiled: LiteLLM with py-spy meanwhile, us with the V8 profiles read after exit. */
async function profileTargets(o: {
  peers: Peer[];
  trees: Trees;
  install: LitellmInstall;
  dataDir: string;
  stop: AbortSignal;
}) {
  const pySpy = await ensurePySpy(o.install.python, (line) => log(line));
  const peer = (name: 'us' | 'litellm') => o.peers.find((p) => p.name === name)!;
  const common = { concurrency: PROFILE_CLIENTS, seconds: PROFILE_SECONDS, prompt: FAST, stop: o.stop };
  log(`profile: LiteLLM alone, ${PROFILE_CLIENTS} clients for ${PROFILE_SECONDS} s under py-spy`);
  const spyFile = join(o.dataDir, 'litellm.pyspy.txt');
  const spying = recordPySpy(pySpy, o.trees.litellm, PROFILE_SECONDS + 1, spyFile);
  const litellm = await profiledSegment('litellm', peer('litellm'), {
    ...common,
    pid: o.trees.litellm,
    trees: { litellm: o.trees.litellm },
  });
  await spying;
  const litellmAreas = await pySpyBreakdown(spyFile);
  log(`profile: us alone, ${PROFILE_CLIENTS} clients for ${PROFILE_SECONDS} s under V8's profiler`);
  const us = await profiledSegment('us', peer('us'), {
    ...common,
    pid: o.trees.service,
    trees: {
      service: o.trees.service,
      temporal: o.trees.temporal,
      postgres: o.trees.postgres,
      ...(o.trees.temporalDb === undefined ? {} : { temporalDb: o.trees.temporalDb }),
    },
  });
  return { litellm, litellmAreas, us };
}

async function reportProfile(
  p: NonNullable<Awaited<ReturnType<typeof profileTargets>>>,
  o: { profileDir: string; keep: boolean },
): Promise<void> {
  const ours = await v8Breakdown(o.profileDir, { fromUs: p.us.fromUs, toUs: p.us.toUs }, process.cwd());
  const perRequest = (ms: Record<string, number>) =>
    Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v / Math.max(1, p.us.requests)]));
  const litellmCpu = Object.values(p.litellm.threadsPerRequest).reduce((s, v) => s + v, 0);
  const rate = (s: ProfiledSegment) =>
    `${s.requests} requests in ${s.seconds} s (${(s.requests / s.seconds).toFixed(1)}/s), ${s.errors} errors; idle again ${(s.drainMs / 1000).toFixed(1)} s after the last answer`;
  console.log(`\nWhere a whole reply's CPU goes, ${PROFILE_CLIENTS} clients, each target alone (${FAST})\n`);
  console.log(`LiteLLM: ${rate(p.litellm)}`);
  console.log(renderAreas('LiteLLM process by thread', p.litellm.threadsPerRequest));
  console.log(
    renderAreas(
      'LiteLLM process by code area (py-spy samples, scaled to its CPU)',
      scaleShares(p.litellmAreas, litellmCpu),
    ),
  );
  console.log(`\nUs: ${rate(p.us)}`);
  console.log(renderAreas('Process trees (service = API + workers)', p.us.treesPerRequest));
  console.log(renderAreas('Service process by thread', p.us.threadsPerRequest));
  console.log(
    renderAreas(
      `Service JS by code area (V8 samples of ${ours.threads} JS threads, self time)`,
      perRequest(ours.byArea),
    ),
  );
  const json = JSON.stringify(
    {
      only: 'peers',
      profile: true,
      date: new Date().toISOString(),
      clients: PROFILE_CLIENTS,
      prompt: FAST,
      litellm: { ...p.litellm, areas: scaleShares(p.litellmAreas, litellmCpu) },
      us: { ...p.us, jsAreas: perRequest(ours.byArea) },
    },
    null,
    2,
  );
  console.log(`\nResults: ${await writeResults(json, 'peers-profile')}`);
  if (!o.keep) await rm(o.profileDir, { recursive: true, force: true });
}
