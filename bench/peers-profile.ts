// `npm run bench -- --only=peers --profile`: where LiteLLM's CPU and ours go while each serves 20
// clients alone (not interleaved, so each profile holds one target). Per request: the process's
// threads from /proc, and its code areas from a sampling profiler, scaled to the process's CPU.
import { performance } from 'node:perf_hooks';
import { minusThreads, monotonicUs, threadCpuMs, waitUntilIdle } from './cpu-breakdown';
import type { Peer } from './peers';
import { treeCpuMs } from './procfs';
import { round } from './stats';

export interface ProfiledSegment {
  target: 'us' | 'litellm';
  requests: number;
  errors: number;
  seconds: number;
  /** After the last answer, until the process trees were idle again. */
  drainMs: number;
  fromUs: number;
  toUs: number;
  /** CPU ms per request of the profiled process, by thread name. */
  threadsPerRequest: Record<string, number>;
  /** CPU ms per request of each process tree that took part. */
  treesPerRequest: Record<string, number>;
}

/** `peer` under `concurrency` clients for `seconds`, with the CPU of `pid`'s threads and of `trees` around it. */
export async function profiledSegment(
  target: 'us' | 'litellm',
  peer: Peer,
  o: {
    pid: number;
    trees: Record<string, number>;
    concurrency: number;
    seconds: number;
    prompt: string;
    stop: AbortSignal;
  },
): Promise<ProfiledSegment> {
  const trees0 = Object.fromEntries(
    await Promise.all(Object.entries(o.trees).map(async ([k, pid]) => [k, await treeCpuMs(pid)] as const)),
  );
  const threads0 = await threadCpuMs(o.pid);
  const fromUs = monotonicUs();
  const end = performance.now() + o.seconds * 1000;
  let requests = 0;
  let errors = 0;
  await Promise.all(
    Array.from({ length: o.concurrency }, async (_, lane) => {
      while (performance.now() < end && !o.stop.aborted) {
        try {
          await peer.whole(o.prompt, lane);
          requests++;
        } catch {
          errors++;
        }
      }
    }),
  );
  // Work the answers left behind (our workflows finish after the reply) counts too.
  const drainMs = Math.round(await waitUntilIdle(Object.values(o.trees), DRAIN_LIMIT_MS));
  const toUs = monotonicUs();
  const threads = minusThreads(await threadCpuMs(o.pid), threads0);
  const treesPerRequest = Object.fromEntries(
    await Promise.all(
      Object.entries(o.trees).map(
        async ([k, pid]) => [k, round(((await treeCpuMs(pid)) - trees0[k]!) / Math.max(1, requests), 2)] as const,
      ),
    ),
  );
  return {
    target,
    requests,
    errors,
    seconds: o.seconds,
    drainMs,
    fromUs,
    toUs,
    treesPerRequest,
    threadsPerRequest: Object.fromEntries(
      Object.entries(threads).map(([k, v]) => [k, round(v / Math.max(1, requests), 2)]),
    ),
  };
}

const DRAIN_LIMIT_MS = 60_000;

/** Shares (summing to 1) of a process's CPU per request, as ms. */
export function scaleShares(shares: Record<string, number>, msPerRequest: number): Record<string, number> {
  return Object.fromEntries(Object.entries(shares).map(([k, v]) => [k, round(v * msPerRequest, 2)]));
}

/** A table of ms per request by area, largest first, with each area's share. */
export function renderAreas(title: string, areas: Record<string, number>): string {
  const total = Object.values(areas).reduce((s, v) => s + v, 0);
  const rows = Object.entries(areas)
    .sort((a, b) => b[1] - a[1])
    .filter(([, v]) => v >= 0.01);
  const width = Math.max(...rows.map(([k]) => k.length), 10);
  return [
    `${title} — ${total.toFixed(2)} ms per request`,
    ...rows.map(
      ([k, v]) =>
        `  ${k.padEnd(width)}  ${v.toFixed(2).padStart(7)} ms  ${((v / total) * 100).toFixed(1).padStart(5)} %`,
    ),
  ].join('\n');
}
