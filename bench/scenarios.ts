import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CpuUse } from './cpu';
import type { WalUse } from './wal';
import type { BenchAccount, ErrorLog, Http } from './http';
import { openAccount, runPool } from './http';
import type { MemorySampler } from './memory';
import type { Sizes } from './sizes';
import { summarise } from './stats';
import type { LatencyStats } from './stats';
import type { Stack } from './stack';

export interface ScenarioResult {
  id: string;
  title: string;
  /** Measured requests (warm-up excluded). */
  n: number;
  errors: number;
  latency: LatencyStats;
  wallMs: number;
  /** Completed generations (or requests) per second over the measured part. */
  throughput?: number;
  /** Videos: submit → settled in the ledger, and how long until the last one settled. */
  settle?: LatencyStats;
  allSettledMs?: number;
  /** The one-account video drain: started out of id order, and the most running at once. */
  fifo?: { inversions: number; maxRunningAtOnce: number };
  /** CPU used by each part of the stack during the measured part (and until the stack was idle again). */
  cpu?: CpuUse;
  /** What each PostgreSQL server wrote meanwhile: ours, and the Temporal server's (topology cluster). */
  wal?: { ours: WalUse; temporal?: WalUse };
  /** The account whose generations the profile reads through Temporal visibility. */
  accountId?: string;
  /** The in-flight scenario: the most jobs seen live at once, and when they were let go. */
  inFlight?: { max: number; holdUntil: number };
  /** Which side ran it: the service or the bare reference. */
  side?: 'service' | 'reference';
}

/** One generation the profile reads back: its id, the client's latency and when the client sent it (epoch ms). */
export interface Sample {
  id: string;
  ms: number;
  at?: number;
}

export interface Context {
  http: Http;
  /** The bare reference's HTTP server (bench/reference-process.ts). */
  ref: Http;
  stack: Stack;
  errors: ErrorLog;
  sizes: Sizes;
  memory: MemorySampler;
  log: (line: string) => void;
  /** Runs the measured part of a scenario (not its set-up or warm-up) and records the CPU it took. */
  measure<T>(work: () => Promise<T>): Promise<T>;
  /** Generation ids per kind, for the Temporal history profile. */
  samples: Record<'image' | 'chat' | 'video' | 'refused' | 'refImage', Sample[]>;
}

interface GenerationView {
  id: string;
  status: string;
  creditsCharged: number;
  error: unknown;
}

const HUGE_BALANCE = 1_000_000_000;
// sim:delay=0 so the numbers measure the service, not the simulator's pretend latency.
const IMAGE = { kind: 'image', model: 'image-flux', prompt: 'a lighthouse at dusk sim:delay=0' } as const;
const VIDEO = { kind: 'video', model: 'kling', prompt: 'waves on a pier sim:delay=0' } as const;
const CHAT = { kind: 'chat', model: 'chat-haiku', prompt: 'say something kind sim:delay=0' } as const;

type Expect = { http: 200; statuses: readonly string[] } | { http: 402 };

/**
 * One POST /api/generate. Anything other than the expected answer is a service error: a 5xx, a
 * 429 (the bench spreads load over keys to stay clear of rate limits), or a generation that
 * ended `failed` although nothing asked it to.
 */
async function generate(
  ctx: Context,
  account: BenchAccount,
  body: object,
  expect: Expect,
): Promise<{ ms: number; id?: string; at: number }> {
  const at = Date.now();
  let r;
  try {
    r = await ctx.http.request<{ generation?: GenerationView; error?: { type: string } }>('POST', '/api/generate', {
      token: account.nextKey(),
      body,
    });
  } catch (err) {
    if (ctx.http.stop.aborted) throw err; // interrupted: not the service's fault
    ctx.errors.record(`POST /api/generate: ${(err as Error).message}`);
    return { ms: Number.NaN, at };
  }
  if (r.status !== expect.http) {
    ctx.errors.record(
      `POST /api/generate ${JSON.stringify(body)}: expected ${expect.http}, got ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
    );
    return { ms: r.ms, at };
  }
  if (expect.http === 402) {
    if (r.body.error?.type !== 'insufficient_credits')
      ctx.errors.record(`402 with unexpected body ${JSON.stringify(r.body).slice(0, 300)}`);
    return { ms: r.ms, at };
  }
  const g = r.body.generation;
  if (!g || !expect.statuses.includes(g.status)) {
    ctx.errors.record(
      `POST /api/generate ${JSON.stringify(body)}: expected status ${expect.statuses.join('|')}, got ${JSON.stringify(r.body).slice(0, 300)}`,
    );
  }
  return { ms: r.ms, at, ...(g ? { id: g.id } : {}) };
}

const SUCCEEDED: Expect = { http: 200, statuses: ['succeeded'] };
const ADMITTED: Expect = { http: 200, statuses: ['queued', 'running'] };

export function result(
  id: string,
  title: string,
  latencies: number[],
  wallMs: number,
  ctx: Context,
  errorsBefore: number,
  more: Partial<ScenarioResult> = {},
): ScenarioResult {
  const valid = latencies.filter((v) => Number.isFinite(v));
  return {
    id,
    title,
    n: latencies.length,
    errors: ctx.errors.count - errorsBefore,
    latency: summarise(valid),
    wallMs,
    ...more,
  };
}

/** Runs `count` calls one after another and returns their latencies. */
export async function sequential(
  count: number,
  call: (i: number) => Promise<{ ms: number; id?: string; at?: number }>,
  keep?: Sample[],
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await call(i);
    out.push(r.ms);
    if (keep && r.id) keep.push({ id: r.id, ms: r.ms, ...(r.at === undefined ? {} : { at: r.at }) });
  }
  return out;
}

/** 0. The floor: an authenticated read (key lookup, rate limit, one SELECT) with no Temporal in it. */
export async function baseline(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.baseline;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: 100, requests: n + warmup });
  const read = async () => {
    const r = await ctx.http.request('GET', '/api/credits', { token: account.nextKey() });
    // (A failed fetch throws: an interrupted run stops here, a dead API aborts the bench.)
    if (r.status !== 200) ctx.errors.record(`GET /api/credits: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    return { ms: r.ms };
  };
  await sequential(warmup, read);
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() => sequential(n, read));
  return result('baseline', 'GET /api/credits sequential (HTTP floor)', latencies, performance.now() - t, ctx, before);
}

/** 1. Sequential image submits; the client waits for `succeeded` in the same call. */
export async function imageSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.imageSequential;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, IMAGE, SUCCEEDED));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() =>
    sequential(n, () => generate(ctx, account, IMAGE, SUCCEEDED), ctx.samples.image),
  );
  const wallMs = performance.now() - t;
  return result('image.sequential', `image sequential (N=${n})`, latencies, wallMs, ctx, before, {
    throughput: (n / wallMs) * 1000,
  });
}

/** 2. Concurrent image submits from one account: throughput and latency under load. */
export async function imageConcurrent(ctx: Context, concurrency: number): Promise<ScenarioResult> {
  const { total } = ctx.sizes.imageConcurrent;
  const warmup = concurrency;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, {
    credits: HUGE_BALANCE,
    requests: total + warmup,
  });
  await runPool(warmup, concurrency, async () => void (await generate(ctx, account, IMAGE, SUCCEEDED)));
  const before = ctx.errors.count;
  const latencies: number[] = [];
  const t = performance.now();
  await ctx.measure(() =>
    runPool(total, concurrency, async () => {
      latencies.push((await generate(ctx, account, IMAGE, SUCCEEDED)).ms);
    }),
  );
  const wallMs = performance.now() - t;
  return result(
    `image.c${concurrency}`,
    `image concurrency ${concurrency} (total ${total})`,
    latencies,
    wallMs,
    ctx,
    before,
    {
      throughput: (total / wallMs) * 1000,
    },
  );
}

interface Observed {
  status: string;
  finishedMs: number | null;
  /** Poll round in which the video was first seen waiting in `queued`. */
  queuedRound?: number;
  /** Poll round in which the video was first seen out of `queued` (claimed a slot, or ended). */
  leftQueueRound?: number;
}

/**
 * Watches a batch of videos in PostgreSQL (not through the API, so neither the rate limit nor the
 * API sees extra load) from the first submit until all have settled. Each poll is one statement,
 * hence one consistent snapshot: the most `running` videos of one account seen at once is exact,
 * and the order in which videos leave `queued` shows whether the drain is first in, first out.
 */
function observeVideos(ctx: Context, everyMs = 50) {
  const ids: string[] = [];
  const seen = new Map<string, Observed>();
  let round = 0;
  let maxRunningPerAccount = 0;

  const poll = async (): Promise<boolean> => {
    if (ids.length === 0) return false;
    const r = await ctx.stack.observer.query<{
      id: string;
      account_id: string;
      status: string;
      finished_ms: number | null;
    }>(
      `SELECT id, account_id, status, (extract(epoch FROM finished_at) * 1000)::float8 AS finished_ms
         FROM generations WHERE id = ANY($1::text[])`,
      [ids],
    );
    round++;
    const running = new Map<string, number>();
    for (const row of r.rows) {
      const o = seen.get(row.id) ?? { status: row.status, finishedMs: null };
      o.status = row.status;
      o.finishedMs = row.finished_ms;
      if (row.status === 'queued') o.queuedRound ??= round;
      else o.leftQueueRound ??= round;
      seen.set(row.id, o);
      if (row.status === 'running') running.set(row.account_id, (running.get(row.account_id) ?? 0) + 1);
    }
    for (const n of running.values()) maxRunningPerAccount = Math.max(maxRunningPerAccount, n);
    return r.rows.length === ids.length && r.rows.every((row) => row.status === 'succeeded' || row.status === 'failed');
  };

  let submitting = true;
  const done = (async () => {
    const deadline = Date.now() + 5 * 60_000;
    for (;;) {
      const settled = await poll();
      if (settled && !submitting) return;
      if (Date.now() > deadline) {
        const live = [...seen.values()].filter((o) => o.status !== 'succeeded' && o.status !== 'failed').length;
        ctx.errors.record(`videos not settled within 5 minutes: ${live} of ${ids.length} still live`);
        return;
      }
      await sleep(everyMs);
    }
  })();

  return {
    add: (id: string) => void ids.push(id),
    /** Resolves once every added video has settled (call after the last submit). */
    async finish() {
      submitting = false;
      await done;
      // Ids are time-ordered and the slot query admits an account's oldest queued video first.
      // An inversion: an older video was already seen waiting, yet a younger one left the queue
      // in an earlier poll. (Videos admitted concurrently may legitimately start out of id order
      // while the older one's row does not exist yet; requiring it to have been seen queued
      // excludes that.)
      const order = [...seen.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, o]) => o);
      let inversions = 0;
      for (let i = 0; i < order.length; i++) {
        const older = order[i]!;
        const olderLeft = older.leftQueueRound ?? Infinity;
        for (let j = i + 1; j < order.length; j++) {
          const youngerLeft = order[j]!.leftQueueRound ?? Infinity;
          if (older.queuedRound !== undefined && older.queuedRound < youngerLeft && youngerLeft < olderLeft)
            inversions++;
        }
      }
      return { seen, maxRunningPerAccount, inversions };
    },
  };
}

/** Submits videos (admission only: the answer is `queued` or `running`, hold placed) and waits for them all to settle. */
async function videoBatch(ctx: Context, accounts: BenchAccount[], total: number, concurrency: number) {
  const observer = observeVideos(ctx);
  const submitted: { id: string; submitAt: number; ms: number }[] = [];
  const latencies: number[] = [];
  const t0 = Date.now();
  const tp = performance.now();
  await runPool(total, concurrency, async (i) => {
    const submitAt = Date.now();
    const r = await generate(ctx, accounts[i % accounts.length]!, VIDEO, ADMITTED);
    latencies.push(r.ms);
    if (r.id) {
      submitted.push({ id: r.id, submitAt, ms: r.ms });
      observer.add(r.id);
    }
  });
  const admitWallMs = performance.now() - tp;
  const { seen, maxRunningPerAccount, inversions } = await observer.finish();
  const settle: number[] = [];
  let failed = 0;
  let lastFinished = t0;
  for (const s of submitted) {
    const o = seen.get(s.id);
    if (!o || o.finishedMs === null) continue;
    if (o.status !== 'succeeded') failed++;
    settle.push(o.finishedMs - s.submitAt);
    lastFinished = Math.max(lastFinished, o.finishedMs);
  }
  if (failed > 0) ctx.errors.record(`${failed} videos ended failed`);
  if (maxRunningPerAccount > 5)
    ctx.errors.record(`an account had ${maxRunningPerAccount} videos running at once (limit 5)`);
  return {
    latencies,
    admitWallMs,
    submitted,
    settle: summarise(settle),
    makespanMs: lastFinished - t0,
    maxRunningPerAccount,
    inversions,
  };
}

/** 3a. Video submits one after another (one client), over 10 accounts: the `queued` answer's latency. */
export async function videoSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.videoSequential;
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < 10; i++)
    accounts.push(
      await openAccount(ctx.http, ctx.stack.adminToken, {
        credits: HUGE_BALANCE,
        requests: Math.ceil((n + warmup) / 10) + 1,
      }),
    );
  await videoBatch(ctx, accounts, warmup, 1);
  const before = ctx.errors.count;
  const batch = await ctx.measure(() => videoBatch(ctx, accounts, n, 1));
  return result(
    'video.c1',
    `video submit → queued, 1 client (N=${n})`,
    batch.latencies,
    batch.admitWallMs,
    ctx,
    before,
    {
      settle: batch.settle,
      allSettledMs: batch.makespanMs,
    },
  );
}

/** 3b. Video admission spread over many accounts, so the 5-slot limit per account does not dominate. */
export async function videoSpread(ctx: Context): Promise<ScenarioResult> {
  const { total, accounts: accountCount, concurrency, warmup } = ctx.sizes.videoSpread;
  const perAccount = Math.ceil(total / accountCount);
  const warm = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: warmup });
  await videoBatch(ctx, [warm], warmup, Math.min(concurrency, warmup));
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < accountCount; i++)
    accounts.push(await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: perAccount }));
  const before = ctx.errors.count;
  const batch = await ctx.measure(() => videoBatch(ctx, accounts, total, concurrency));
  ctx.samples.video.push(...batch.submitted.map((s) => ({ id: s.id, ms: s.ms, at: s.submitAt })));
  return result(
    `video.c${concurrency}`,
    `video submit → queued, ${concurrency} clients over ${accountCount} accounts (total ${total})`,
    batch.latencies,
    batch.admitWallMs,
    ctx,
    before,
    {
      throughput: (total / batch.makespanMs) * 1000,
      settle: batch.settle,
      allSettledMs: batch.makespanMs,
    },
  );
}

/** 3c. One account with many videos: 5 run at once, the rest drain first in first out. */
export async function videoFifo(ctx: Context): Promise<ScenarioResult> {
  const { total, concurrency } = ctx.sizes.videoFifo;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: total });
  const before = ctx.errors.count;
  const batch = await ctx.measure(() => videoBatch(ctx, [account], total, concurrency));
  if (batch.inversions > 0)
    ctx.errors.record(`the video queue of one account drained out of order (${batch.inversions} inverted pairs)`);
  return result(
    'video.fifo',
    `video FIFO drain, 1 account × ${total}`,
    batch.latencies,
    batch.admitWallMs,
    ctx,
    before,
    {
      throughput: (total / batch.makespanMs) * 1000,
      settle: batch.settle,
      allSettledMs: batch.makespanMs,
      fifo: { inversions: batch.inversions, maxRunningAtOnce: batch.maxRunningPerAccount },
    },
  );
}

/** 4. Paid chat (chat-haiku, no free allowance) one after another. */
export async function chatSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.chatSequential;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, CHAT, SUCCEEDED));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() =>
    sequential(n, () => generate(ctx, account, CHAT, SUCCEEDED), ctx.samples.chat),
  );
  const wallMs = performance.now() - t;
  return result('chat.sequential', `chat paid sequential (N=${n})`, latencies, wallMs, ctx, before, {
    throughput: (n / wallMs) * 1000,
  });
}

/** 5. 402 refusals: an account with 0 credits; nothing is held and nothing runs. */
export async function refusal(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.refusal;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: 0, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, IMAGE, { http: 402 }));
  const before = ctx.errors.count;
  const t = performance.now();
  // A 402 names no generation; the profile finds the refused workflows by account instead.
  const latencies = await ctx.measure(() => sequential(n, () => generate(ctx, account, IMAGE, { http: 402 })));
  const wallMs = performance.now() - t;
  return result('refusal.402', `402 refusal sequential (N=${n})`, latencies, wallMs, ctx, before, {
    accountId: account.id,
  });
}

/**
 * How long to hold in-flight jobs so that the last submit lands before the first is let go: the
 * submit rate of the c32 video scenario just measured, with a margin.
 */
export function holdFor(total: number, submitsPerSecond: number | undefined): number {
  const rate =
    submitsPerSecond !== undefined && Number.isFinite(submitsPerSecond) && submitsPerSecond > 0 ? submitsPerSecond : 20;
  return Math.min(90_000, Math.round((total / rate) * 1000 * 1.4 + 3_000));
}

/**
 * 6. Many videos in flight at once, for memory: each waits in the provider until one common moment
 * (`sim:until`), then fails without rendering (`sim:fail`), so a thousand drain in seconds. Spread
 * over accounts 5 each, so every one holds a slot and none polls the queue. The peak RSS of the
 * phase is the figure; the most seen in flight at once (PostgreSQL, one statement) is reported.
 */
export async function inflightVideos(ctx: Context, submitsPerSecond: number | undefined): Promise<ScenarioResult> {
  const { total, accounts: accountCount, concurrency } = ctx.sizes.inflight;
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < accountCount; i++)
    accounts.push(
      await openAccount(ctx.http, ctx.stack.adminToken, {
        credits: HUGE_BALANCE,
        requests: Math.ceil(total / accountCount),
      }),
    );
  const until = Date.now() + holdFor(total, submitsPerSecond);
  const body = { ...VIDEO, prompt: `waves held in flight sim:until=${until} sim:fail` };
  const before = ctx.errors.count;
  const ids: string[] = [];
  const latencies: number[] = [];
  const t = performance.now();
  const maxInFlight = await ctx.measure(async () => {
    await runPool(total, concurrency, async (i) => {
      const r = await generate(ctx, accounts[i % accounts.length]!, body, ADMITTED);
      latencies.push(r.ms);
      if (r.id) ids.push(r.id);
    });
    return holdThenDrain(ctx, 'inflight', until, async () => {
      const r = await ctx.stack.observer.query<{ live: number }>(
        `SELECT count(*)::int AS live FROM generations WHERE id = ANY($1::text[]) AND status IN ('queued', 'running')`,
        [ids],
      );
      return r.rows[0]?.live ?? 0;
    });
  });
  return result(
    'inflight',
    `${total} videos in flight (${accountCount} accounts, ${concurrency} clients)`,
    latencies,
    performance.now() - t,
    ctx,
    before,
    { inFlight: { max: maxInFlight, holdUntil: until } },
  );
}

/**
 * The in-flight scenarios' second half: counts the jobs in flight once all are submitted, waits
 * for the moment they are let go (memory phase `<phase>`: held), then for all to end (phase
 * `<phase>.drain`: a thousand workflow tasks at once, most of them replays). Returns the most
 * seen in flight at once.
 */
export async function holdThenDrain(
  ctx: Context,
  phase: string,
  until: number,
  live: () => Promise<number>,
): Promise<number> {
  const held = await live();
  await sleep(Math.max(0, until - Date.now()));
  ctx.memory.phase(`${phase}.drain`);
  return Math.max(held, await waitForDrain(live, ctx));
}

/** Polls the number of live jobs until none is left; returns the most seen at once. */
export async function waitForDrain(live: () => Promise<number>, ctx: Context, timeoutMs = 180_000): Promise<number> {
  let max = 0;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await live();
    max = Math.max(max, n);
    if (n === 0) return max;
    if (Date.now() > deadline) {
      ctx.errors.record(`${n} jobs still in flight after ${timeoutMs / 1000} s`);
      return max;
    }
    await sleep(200);
  }
}
