// `npm run bench -- --only=idle [--keep]`: what our stack burns with nothing to do (the
// idle row), by process tree, by process (PostgreSQL's backends and helpers) and by thread (the
// service's and the Temporal server's). Counted as each process's own CPU time from /proc, which a
// busy machine slows down but does not add to: the figure stays readable beside other work.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createShutdown } from '../runtime/lifecycle';
import { startOpenAiUpstream } from '../test/support/upstream-servers';
import { minusThreads, threadCpuMs, waitUntilIdle } from './cpu-breakdown';
import { guardRun } from './harness';
import { createHttp, openAccount } from './http';
import { createPeer } from './peers';
import { processCpuMs, processTree, treeCpuMs } from './procfs';
import { createStack } from './stack';
import { round } from './stats';
import { STREAM_MODEL, UPSTREAM_MODEL } from './stream';

const log = (line: string) => console.error(`[bench] ${line}`);
/** Chats before the measure, so that every poller, cache, connection and JIT is in its steady state. */
const WARMUP_CHATS = 100;
/** Then chats measured one at a time (CPU per chat with no backlog). */
const MEASURED_CHATS = 200;
const PROMPT = 'say something up:tokens=32';
/** After the warm-up: the last workflows close and the reconciler's first turn passes. */
const SETTLE_MS = 15_000;
const WINDOW_MS = 5_000;

export async function runIdle(args: {
  keep: boolean;
  temporalDb: 'file' | 'memory';
  seconds: number;
  profile: boolean;
}): Promise<number> {
  const dataDir = join(process.cwd(), '.test-data', `bench-${process.pid}`);
  const profileDir = `${dataDir}-cpu`;
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
    workerMode: 'process',
    temporalDb: args.temporalDb,
    keepData: args.keep,
    log,
    reference: false,
    env: { UPSTREAMS_JSON: JSON.stringify(upstreams) },
    // V8 writes one profile per JS thread of the service when it exits (open them in Chrome's DevTools).
    ...(args.profile ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}),
  });
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  shutdown.add('upstream', () => upstream.close());
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({
    log,
    shutdown,
    interrupt,
    watchdogMinutes: 6,
    stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed',
  });
  try {
    const s = await stackHandle.start();
    const http = createHttp(s.baseUrl, interrupt.signal);
    const account = await openAccount(http, s.adminToken, {
      credits: 1_000_000,
      requests: WARMUP_CHATS + MEASURED_CHATS + 10,
    });
    const us = createPeer('us', http, {
      path: '/v1/chat/completions',
      model: STREAM_MODEL,
      key: () => account.nextKey(),
    });
    const trees = { service: s.workerPid!, temporal: s.temporal.pid, postgres: s.postgres.pid };
    log(
      `warm-up: ${WARMUP_CHATS} whole chat replies, then ${MEASURED_CHATS} measured, one at a time; then ${SETTLE_MS / 1000} s to settle`,
    );
    for (let i = 0; i < WARMUP_CHATS; i++) await us.whole(PROMPT, 0);
    await waitUntilIdle(Object.values(trees), SETTLE_MS);
    // CPU per chat with no backlog, until the stack is idle again (our workflows finish after the
    // reply), which a loaded machine slows but does not add to.
    const chats0 = await treesCpuMs(trees);
    for (let i = 0; i < MEASURED_CHATS; i++) await us.whole(PROMPT, 0);
    await waitUntilIdle(Object.values(trees), SETTLE_MS);
    const chats1 = await treesCpuMs(trees);
    const perChat = Object.fromEntries(
      (Object.keys(trees) as (keyof Trees)[]).map((k) => [k, round((chats1[k] - chats0[k]) / MEASURED_CHATS, 2)]),
    );
    await sleep(SETTLE_MS);

    log(`idle: ${args.seconds} s with nothing to do`);
    const before = await snapshot(trees);
    const t0 = performance.now();
    // Windows of a few seconds as well as the whole: a periodic job (the reconciler's minute, a
    // relay's poll) shows as a burst in one window, steady waste in all of them.
    const windows: Record<keyof typeof trees, number[]> = { service: [], temporal: [], postgres: [] };
    let last = before.trees;
    while (performance.now() - t0 < args.seconds * 1000) {
      await sleep(WINDOW_MS);
      const now = await treesCpuMs(trees);
      for (const name of Object.keys(trees) as (keyof typeof trees)[])
        windows[name].push(round((now[name] - last[name]) / (WINDOW_MS / 1000), 1));
      last = now;
    }
    const after = await snapshot(trees);
    const perSecond = (ms: number) => round(ms / ((performance.now() - t0) / 1000), 2);

    const lines = [
      `CPU ms per whole chat reply, one at a time (${MEASURED_CHATS}, until idle again): ${Object.entries(perChat)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}; all ${round(
        Object.values(perChat).reduce((a, b) => a + b, 0),
        2,
      ).toFixed(2)}`,
      `idle CPU, ms per second over ${args.seconds} s (each process's own CPU time, /proc); the median ${WINDOW_MS / 1000} s window, and each in turn`,
    ];
    for (const name of Object.keys(trees) as (keyof typeof trees)[]) {
      const sorted = [...windows[name]].sort((a, b) => a - b);
      lines.push(
        `  ${name.padEnd(10)} ${perSecond(after.trees[name] - before.trees[name])
          .toFixed(2)
          .padStart(
            7,
          )}   median ${String(sorted[Math.floor(sorted.length / 2)] ?? 0).padStart(5)}   windows ${windows[name].join(' ')}`,
      );
    }
    const rows = (title: string, a: Record<string, number>, b: Record<string, number>) => {
      const d = Object.entries(minusThreads(a, b))
        .map(([k, v]) => [k, perSecond(v)] as const)
        .filter(([, v]) => v >= 0.01)
        .sort((x, y) => y[1] - x[1]);
      lines.push(title, ...d.map(([k, v]) => `  ${k.padEnd(40)} ${v.toFixed(2).padStart(7)}`));
    };
    rows('service, by thread:', after.serviceThreads, before.serviceThreads);
    rows('Temporal dev server, by thread:', after.temporalThreads, before.temporalThreads);
    rows('PostgreSQL, by process:', after.postgresProcesses, before.postgresProcesses);
    if (args.profile)
      lines.push(
        `V8 profiles of the service's threads (the whole run; the idle minute is their last ${args.seconds} s before the stop): ${profileDir}`,
      );
    console.log(lines.join('\n'));
    return 0;
  } finally {
    await shutdown.stop();
  }
}

type Trees = { service: number; temporal: number; postgres: number };

const treesCpuMs = async (trees: Trees): Promise<Trees> => ({
  service: await treeCpuMs(trees.service),
  temporal: await treeCpuMs(trees.temporal),
  postgres: await treeCpuMs(trees.postgres),
});

async function snapshot(trees: Trees) {
  return {
    trees: await treesCpuMs(trees),
    serviceThreads: await threadCpuMs(trees.service),
    temporalThreads: await threadCpuMs(trees.temporal),
    postgresProcesses: await processesCpuMs(trees.postgres),
  };
}

/** CPU ms of each process of a tree, by its title (PostgreSQL's say what they are: `checkpointer`, `idle` backends…). */
async function processesCpuMs(root: number): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const pid of await processTree(root)) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    // A backend's title names its client's address and port: one line per kind of process, not per connection.
    const title = cmdline
      .replace(/\0+$/, '')
      .replace(/\0/g, ' ')
      .replace(/\d+\.\d+\.\d+\.\d+\(\d+\)/, '<client>')
      .replace(/^postgres: /, '')
      .slice(0, 40);
    out[title] = (out[title] ?? 0) + (await processCpuMs(pid));
  }
  return out;
}
