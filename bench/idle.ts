// `npm run bench -- --only=idle [--keep]`: what our stack burns with nothing to do (issue 17's
// idle row), by process tree, by process (PostgreSQL's backends and helpers) and by thread (the
// service's and the Temporal server's). Counted as each process's own CPU time from /proc, which a
// busy machine slows down but does not add to: the figure stays readable beside other work.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createShutdown } from '../runtime/lifecycle';
import { startOpenAiUpstream } from '../test/support/upstream-servers';
import { minusThreads, threadCpuMs } from './cpu-breakdown';
import { guardRun } from './harness';
import { createHttp, openAccount } from './http';
import { createPeer } from './peers';
import { processCpuMs, processTree, treeCpuMs } from './procfs';
import { createStack } from './stack';
import { round } from './stats';
import { STREAM_MODEL, UPSTREAM_MODEL } from './stream';

const log = (line: string) => console.error(`[bench] ${line}`);
/** Chats before the measure, so that every poller, cache and connection is in its steady state. */
const WARMUP_CHATS = 30;
/** After the warm-up: the last workflows close and the reconciler's first turn passes. */
const SETTLE_MS = 15_000;

export async function runIdle(args: { keep: boolean; temporalDb: 'file' | 'memory'; seconds: number }): Promise<number> {
  const dataDir = join(process.cwd(), '.test-data', `bench-${process.pid}`);
  const upstream = await startOpenAiUpstream();
  const upstreams = { upstreams: [{ name: 'bench-upstream', protocol: 'openai', baseUrl: upstream.baseUrl, models: { [STREAM_MODEL]: UPSTREAM_MODEL } }] };
  const stackHandle = createStack({ dataDir, workerMode: 'process', temporalDb: args.temporalDb, keepData: args.keep, log, reference: false, env: { UPSTREAMS_JSON: JSON.stringify(upstreams) } });
  const interrupt = new AbortController();
  const shutdown = createShutdown(log);
  shutdown.add('upstream', () => upstream.close());
  shutdown.add('bench stack', () => stackHandle.stop());
  shutdown.add('requests in flight', async () => interrupt.abort());
  guardRun({ log, shutdown, interrupt, watchdogMinutes: 6, stoppedNote: args.keep ? `data kept in ${dataDir}` : 'data folder removed' });
  try {
    const s = await stackHandle.start();
    const http = createHttp(s.baseUrl, interrupt.signal);
    const account = await openAccount(http, s.adminToken, { credits: 1_000_000, requests: WARMUP_CHATS + 10 });
    const us = createPeer('us', http, { path: '/v1/chat/completions', model: STREAM_MODEL, key: () => account.nextKey() });
    log(`warm-up: ${WARMUP_CHATS} chats, then ${SETTLE_MS / 1000} s to settle`);
    for (let i = 0; i < WARMUP_CHATS; i++) await us.whole('say something up:tokens=32', 0);
    await sleep(SETTLE_MS);

    const trees = { service: s.workerPid!, temporal: s.temporal.pid, postgres: s.postgres.pid };
    log(`idle: ${args.seconds} s with nothing to do`);
    const before = await snapshot(trees);
    const t0 = performance.now();
    await sleep(args.seconds * 1000);
    const after = await snapshot(trees);
    const perSecond = (ms: number) => round(ms / ((performance.now() - t0) / 1000), 2);

    const lines = [`idle CPU, ms per second over ${args.seconds} s (each process's own CPU time, /proc)`];
    for (const name of Object.keys(trees) as (keyof typeof trees)[]) {
      lines.push(`  ${name.padEnd(10)} ${perSecond(after.trees[name] - before.trees[name]).toFixed(2).padStart(7)}`);
    }
    const rows = (title: string, a: Record<string, number>, b: Record<string, number>) => {
      const d = Object.entries(minusThreads(a, b)).map(([k, v]) => [k, perSecond(v)] as const).filter(([, v]) => v >= 0.01).sort((x, y) => y[1] - x[1]);
      lines.push(title, ...d.map(([k, v]) => `  ${k.padEnd(40)} ${v.toFixed(2).padStart(7)}`));
    };
    rows('service, by thread:', after.serviceThreads, before.serviceThreads);
    rows('Temporal dev server, by thread:', after.temporalThreads, before.temporalThreads);
    rows('PostgreSQL, by process:', after.postgresProcesses, before.postgresProcesses);
    console.log(lines.join('\n'));
    return 0;
  } finally {
    await shutdown.stop();
  }
}

async function snapshot(trees: { service: number; temporal: number; postgres: number }) {
  return {
    trees: { service: await treeCpuMs(trees.service), temporal: await treeCpuMs(trees.temporal), postgres: await treeCpuMs(trees.postgres) },
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
    const title = cmdline.replace(/\0+$/, '').replace(/\0/g, ' ').replace(/\d+\.\d+\.\d+\.\d+\(\d+\)/, '<client>').replace(/^postgres: /, '').slice(0, 40);
    out[title] = (out[title] ?? 0) + (await processCpuMs(pid));
  }
  return out;
}
