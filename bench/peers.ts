import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUntilIdle } from './cpu-breakdown';
import type { BenchAccount, Http } from './http';
import { treeCpuMs, treePss } from './procfs';
import type { WalReader, WalUse } from './wal';
import { round, summarise } from './stats';
import type { LatencyStats } from './stats';
import { timedStream } from './stream';
import type { Timed } from './stream';

/**
 * The chat path side by side with a peer: the same OpenAI-compatible request to the
 * upstream directly, through LiteLLM's proxy and through us, interleaved round by round so that
 * all three meet the same moment of a shared machine. Every loop is bounded in count and time.
 */
export const PEERS = ['direct', 'litellm', 'us'] as const;
export type PeerName = (typeof PEERS)[number];
/**
 * Under load, two more on the same Temporal server (bench/reference-process.ts): Temporal's floor
 * (a workflow that completes in its first task, started as our chats are, nothing awaited) and our
 * chat's workflow shape alone (the service's `generation` workflow started as the API starts it at
 * a reply's end, with nothing else of the service around it).
 */
export const REFERENCES = ['floor', 'shape'] as const;
export type LoadTargetName = PeerName | (typeof REFERENCES)[number];

/** Something load slices drive: a whole request at a time. */
export interface LoadTarget {
  name: LoadTargetName;
  whole(prompt: string, lane: number): Promise<number>;
}

export interface Peer {
  name: PeerName;
  /** A whole reply: its time in ms; throws on anything but a 200 with choices. */
  whole(prompt: string, lane: number): Promise<number>;
  /** A streamed reply, timed to its first byte, first content and `[DONE]`. */
  stream(prompt: string, lane: number): Promise<Timed>;
}

export class PeerAnswerError extends Error {
  override name = 'PeerAnswerError';
}

/**
 * One peer behind `http` (its base URL): `path` is where chat completions are, `model` the name it
 * knows the model by, `key(lane)` the bearer token for a client lane (none for the upstream).
 */
export function createPeer(
  name: PeerName,
  http: Http,
  o: { path: string; model: string; key: (lane: number) => string | undefined; extra?: Record<string, unknown> },
): Peer {
  const body = (prompt: string, stream: boolean) => ({
    model: o.model,
    messages: [{ role: 'user', content: prompt }],
    max_tokens: 64,
    stream,
    ...(stream ? o.extra : {}),
  });
  return {
    name,
    async whole(prompt, lane) {
      const token = o.key(lane);
      const r = await http.request<{ choices?: unknown[] }>('POST', o.path, {
        body: body(prompt, false),
        ...(token ? { token } : {}),
      });
      if (r.status !== 200 || !Array.isArray(r.body?.choices))
        throw new PeerAnswerError(`${name} whole reply: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      return r.ms;
    },
    stream(prompt, lane) {
      const token = o.key(lane);
      return timedStream(
        `${http.baseUrl}${o.path}`,
        token ? { authorization: `Bearer ${token}` } : {},
        body(prompt, true),
        http.stop,
      );
    },
  };
}

/** One of the references on the bench's reference process: `path` answers once its workflow has started. */
export function createReference(name: (typeof REFERENCES)[number], http: Http, path: string): LoadTarget {
  return {
    name,
    async whole(_prompt, lane) {
      const r = await http.request<{ id?: string }>('POST', path, { body: { account: `acct_lane_${lane}` } });
      if (r.status !== 200 || typeof r.body?.id !== 'string')
        throw new PeerAnswerError(`${name}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      return r.ms;
    },
  };
}

/** A slice's tail is bounded: past this the next slice starts anyway (and the report shows the drain). */
const DRAIN_LIMIT_MS = 90_000;

/**
 * The process trees whose CPU and memory are counted: LiteLLM's; ours (API + workers, the
 * Temporal server, our PostgreSQL and, on the cluster topology, the Temporal server's own
 * PostgreSQL, else 0); and the reference process that runs the floor and the shape.
 */
export interface Trees {
  litellm: number;
  service: number;
  temporal: number;
  temporalDb: number | undefined;
  postgres: number;
  reference: number;
}
export type TreeName = keyof Trees;
const TREE_NAMES: TreeName[] = ['litellm', 'service', 'temporal', 'temporalDb', 'postgres', 'reference'];

async function cpuOf(trees: Trees): Promise<Record<TreeName, number>> {
  const out = {} as Record<TreeName, number>;
  for (const t of TREE_NAMES) {
    const pid = trees[t];
    out[t] = pid === undefined ? 0 : await treeCpuMs(pid);
  }
  return out;
}

/** The PostgreSQL servers whose writes are read from their WAL: ours, and the Temporal server's (cluster). */
export interface WalReaders {
  ours: WalReader;
  temporal: WalReader | undefined;
}
export type WalPerRequest = Record<keyof WalReaders, WalUse | undefined>;

const minus = (b: Record<TreeName, number>, a: Record<TreeName, number>) =>
  Object.fromEntries(TREE_NAMES.map((t) => [t, b[t] - a[t]])) as Record<TreeName, number>;

/** The order of round `i`: each peer goes first, second and third equally often. */
const orderOf = (i: number): PeerName[] => PEERS.map((_, k) => PEERS[(i + k) % PEERS.length]!);

export interface Recorder {
  /** Counts an error (the run then exits 1) unless the run was interrupted, which throws. */
  fail(what: string, err: unknown): void;
}

async function attempt<T>(rec: Recorder, what: string, call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    rec.fail(what, err);
    return undefined;
  }
}

/** CPU each tree used per second with nothing to do. */
export async function idleCpu(trees: Trees, seconds: number): Promise<Record<TreeName, number>> {
  await sleep(2_000); // what the last request left behind settles first
  const a = await cpuOf(trees);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const d = minus(await cpuOf(trees), a);
  const s = (performance.now() - t0) / 1000;
  return Object.fromEntries(TREE_NAMES.map((t) => [t, round(d[t] / s, 2)])) as Record<TreeName, number>;
}

export interface SequentialResult {
  rounds: number;
  whole: Record<PeerName, LatencyStats>;
  /** Time to the first content of a streamed reply. */
  content: Record<PeerName, LatencyStats>;
  /** Per-round differences from direct, over the rounds in which all three answered. */
  wholeOverhead: Record<'litellm' | 'us', LatencyStats>;
  contentOverhead: Record<'litellm' | 'us', LatencyStats>;
}

/** `rounds` rounds; in each, a whole reply from every peer, then a streamed one from every peer. */
export async function sequentialRounds(
  peers: Peer[],
  rounds: number,
  prompt: string,
  rec: Recorder,
  deadline: number,
): Promise<SequentialResult> {
  const whole: Record<PeerName, number>[] = [];
  const content: Record<PeerName, number>[] = [];
  for (let i = 0; i < rounds && performance.now() < deadline; i++) {
    const order = orderOf(i).map((n) => peers.find((p) => p.name === n)!);
    const w: Partial<Record<PeerName, number>> = {};
    for (const p of order) w[p.name] = await attempt(rec, `${p.name} whole`, () => p.whole(prompt, -1));
    const c: Partial<Record<PeerName, number>> = {};
    for (const p of order) c[p.name] = (await attempt(rec, `${p.name} stream`, () => p.stream(prompt, -1)))?.content;
    if (PEERS.every((n) => w[n] !== undefined)) whole.push(w as Record<PeerName, number>);
    if (PEERS.every((n) => c[n] !== undefined)) content.push(c as Record<PeerName, number>);
  }
  const per = (list: Record<PeerName, number>[]) =>
    Object.fromEntries(PEERS.map((n) => [n, summarise(list.map((r) => r[n]))])) as Record<PeerName, LatencyStats>;
  const over = (list: Record<PeerName, number>[]) => ({
    litellm: summarise(list.map((r) => r.litellm - r.direct)),
    us: summarise(list.map((r) => r.us - r.direct)),
  });
  return {
    rounds: whole.length,
    whole: per(whole),
    content: per(content),
    wholeOverhead: over(whole),
    contentOverhead: over(content),
  };
}

export interface LoadResult {
  concurrency: number;
  n: number;
  errors: number;
  /** Requests answered per second of the slices' wall time, each slice until the trees were idle again. */
  perSecond: number;
  /** The same per second of the answering only: what the clients saw, before the work left behind. */
  answeredPerSecond: number;
  /** Mean time from a slice's last answer until the trees were idle again. */
  drainMs: number;
  latency: LatencyStats;
  /** CPU ms per request of each tree, over this peer's slices only. */
  cpuPerRequest: Record<TreeName, number>;
  /** What each PostgreSQL server wrote per request over this peer's slices (when readers are given). */
  walPerRequest?: WalPerRequest;
}

/**
 * Closed-loop load: `concurrency` clients send whole replies back to back. Each of `rounds`
 * rounds gives every peer a slice of `sliceMs` (at most `cap` requests), in rotating order; a
 * slice lasts until the process trees are idle again, and that tail is counted in its wall time and
 * CPU: our replies are answered before their workflows' last steps, which would otherwise run in
 * the next peer's slice.
 */
export async function loadRounds(
  targets: LoadTarget[],
  o: {
    concurrency: number;
    rounds: number;
    sliceMs: number;
    cap: number;
    prompt: string;
    trees: Trees;
    stop: AbortSignal;
    wal?: WalReaders;
  },
  rec: Recorder,
): Promise<Partial<Record<LoadTargetName, LoadResult>>> {
  const names = targets.map((t) => t.name);
  const zeroWal = (): WalUse => ({ bytes: 0, rows: 0, commits: 0 });
  const acc = Object.fromEntries(
    names.map((n) => [
      n,
      {
        errors: 0,
        wallMs: 0,
        answeringMs: 0,
        drainMs: 0,
        latencies: [] as number[],
        cpu: Object.fromEntries(TREE_NAMES.map((t) => [t, 0])) as Record<TreeName, number>,
        wal: { ours: zeroWal(), temporal: zeroWal() },
      },
    ]),
  );
  const marks = async () => ({ ours: await o.wal?.ours.mark(), temporal: await o.wal?.temporal?.mark() });
  for (let r = 0; r < o.rounds; r++) {
    // Each target first, second… equally often, as orderOf does for the peers.
    for (const name of names.map((_, k) => names[(r + k) % names.length]!)) {
      const peer = targets.find((p) => p.name === name)!;
      const a = acc[name]!;
      const wal0 = await marks();
      const cpu0 = await cpuOf(o.trees);
      const t0 = performance.now();
      const end = t0 + o.sliceMs;
      let started = 0;
      let last = t0;
      const lane = async (i: number) => {
        while (performance.now() < end && started < o.cap && !o.stop.aborted) {
          started++;
          const ms = await attempt(rec, `${name} c${o.concurrency}`, () => peer.whole(o.prompt, i));
          if (ms === undefined) a.errors++;
          else a.latencies.push(ms);
          last = performance.now();
        }
      };
      await Promise.all(Array.from({ length: o.concurrency }, (_, i) => lane(i)));
      const drained = await waitUntilIdle(
        TREE_NAMES.map((t) => o.trees[t]).filter((pid): pid is number => pid !== undefined),
        DRAIN_LIMIT_MS,
      );
      a.answeringMs += last - t0;
      a.drainMs += drained;
      a.wallMs += last - t0 + drained;
      const d = minus(await cpuOf(o.trees), cpu0);
      for (const t of TREE_NAMES) a.cpu[t] += d[t];
      const wal1 = await marks();
      for (const server of ['ours', 'temporal'] as const) {
        const reader = o.wal?.[server];
        const [from, to] = [wal0[server], wal1[server]];
        if (!reader || from === undefined || to === undefined) continue;
        const used = await reader.between(from, to);
        a.wal[server].bytes += used.bytes;
        a.wal[server].rows += used.rows;
        a.wal[server].commits += used.commits;
      }
    }
  }
  const walPer = (w: WalUse, ok: number): WalUse => ({
    bytes: Math.round(w.bytes / ok),
    rows: round(w.rows / ok, 2),
    commits: round(w.commits / ok, 2),
  });
  return Object.fromEntries(
    names.map((n) => {
      const a = acc[n]!;
      const ok = a.latencies.length;
      return [
        n,
        {
          concurrency: o.concurrency,
          n: ok,
          errors: a.errors,
          perSecond: round((ok / a.wallMs) * 1000),
          answeredPerSecond: round((ok / a.answeringMs) * 1000),
          drainMs: Math.round(a.drainMs / o.rounds),
          latency: summarise(a.latencies),
          cpuPerRequest: Object.fromEntries(
            TREE_NAMES.map((t) => [t, ok ? round(a.cpu[t] / ok, 2) : Number.NaN]),
          ) as Record<TreeName, number>,
          ...(o.wal && ok
            ? {
                walPerRequest: {
                  ours: walPer(a.wal.ours, ok),
                  temporal: o.wal.temporal ? walPer(a.wal.temporal, ok) : undefined,
                },
              }
            : {}),
        },
      ];
    }),
  );
}

/** Peak PSS of each tree, and of ours summed at the same instant, sampled every `everyMs`. */
export function startPssSampler(trees: Trees, everyMs = 1_000) {
  const peak = Object.fromEntries(TREE_NAMES.map((t) => [t, 0])) as Record<TreeName, number>;
  let ours = 0;
  let samples = 0;
  let busy = false;
  const sample = async () => {
    if (busy) return;
    busy = true;
    try {
      const now = {} as Record<TreeName, number>;
      for (const t of TREE_NAMES) {
        const pid = trees[t];
        now[t] = pid === undefined ? 0 : await treePss(pid);
      }
      for (const t of TREE_NAMES) peak[t] = Math.max(peak[t], now[t]);
      ours = Math.max(ours, now.service + now.temporal + now.temporalDb + now.postgres);
      samples++;
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  timer.unref();
  void sample();
  return {
    async stop(): Promise<{ samples: number; peakMb: Record<TreeName | 'us', number> }> {
      clearInterval(timer);
      await sample();
      const mb = (b: number) => round(b / 2 ** 20, 1);
      return {
        samples,
        peakMb: {
          ...(Object.fromEntries(TREE_NAMES.map((t) => [t, mb(peak[t])])) as Record<TreeName, number>),
          us: mb(ours),
        },
      };
    },
  };
}

/** Accounts whose keys the lanes take turns with: one account per client lane (see loadRounds), one for the sequential rounds (lane -1). */
export function laneKeys(sequential: BenchAccount, lanes: BenchAccount[]): (lane: number) => string {
  return (lane) => (lane < 0 ? sequential : lanes[lane % lanes.length]!).nextKey();
}
