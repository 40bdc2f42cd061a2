import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
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
  /** The account whose generations the profile reads through Temporal visibility. */
  accountId?: string;
}

export interface Context {
  http: Http;
  stack: Stack;
  errors: ErrorLog;
  sizes: Sizes;
  memory: MemorySampler;
  log: (line: string) => void;
  /** Generation ids per kind, for the Temporal history profile. */
  samples: Record<'image' | 'chat' | 'video' | 'refused', { id: string; ms: number }[]>;
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
async function generate(ctx: Context, account: BenchAccount, body: object, expect: Expect): Promise<{ ms: number; id?: string }> {
  let r;
  try {
    r = await ctx.http.request<{ generation?: GenerationView; error?: { type: string } }>('POST', '/api/generate', { token: account.nextKey(), body });
  } catch (err) {
    ctx.errors.record(`POST /api/generate: ${(err as Error).message}`);
    return { ms: Number.NaN };
  }
  if (r.status !== expect.http) {
    ctx.errors.record(`POST /api/generate ${JSON.stringify(body)}: expected ${expect.http}, got ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return { ms: r.ms };
  }
  if (expect.http === 402) {
    if (r.body.error?.type !== 'insufficient_credits') ctx.errors.record(`402 with unexpected body ${JSON.stringify(r.body).slice(0, 300)}`);
    return { ms: r.ms };
  }
  const g = r.body.generation;
  if (!g || !expect.statuses.includes(g.status)) {
    ctx.errors.record(`POST /api/generate ${JSON.stringify(body)}: expected status ${expect.statuses.join('|')}, got ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  return { ms: r.ms, ...(g ? { id: g.id } : {}) };
}

const SUCCEEDED: Expect = { http: 200, statuses: ['succeeded'] };
const ADMITTED: Expect = { http: 200, statuses: ['queued', 'running'] };

function result(id: string, title: string, latencies: number[], wallMs: number, ctx: Context, errorsBefore: number, more: Partial<ScenarioResult> = {}): ScenarioResult {
  const valid = latencies.filter((v) => Number.isFinite(v));
  return { id, title, n: latencies.length, errors: ctx.errors.count - errorsBefore, latency: summarise(valid), wallMs, ...more };
}

/** Runs `count` calls one after another and returns their latencies. */
async function sequential(count: number, call: (i: number) => Promise<{ ms: number; id?: string }>, keep?: { id: string; ms: number }[]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const r = await call(i);
    out.push(r.ms);
    if (keep && r.id) keep.push({ id: r.id, ms: r.ms });
  }
  return out;
}

/** 0. The floor: an authenticated read (key lookup, rate limit, one SELECT) with no Temporal in it. */
export async function baseline(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.baseline;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: 100, requests: n + warmup });
  const read = async () => {
    const r = await ctx.http.request('GET', '/api/credits', { token: account.nextKey() });
    if (r.status !== 200) ctx.errors.record(`GET /api/credits: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    return { ms: r.ms };
  };
  await sequential(warmup, read);
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await sequential(n, read);
  return result('baseline', 'GET /api/credits sequential (HTTP floor)', latencies, performance.now() - t, ctx, before);
}

/** 1. Sequential image submits; the client waits for `succeeded` in the same call. */
export async function imageSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.imageSequential;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, IMAGE, SUCCEEDED));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await sequential(n, () => generate(ctx, account, IMAGE, SUCCEEDED), ctx.samples.image);
  const wallMs = performance.now() - t;
  return result('image.sequential', `image sequential (N=${n})`, latencies, wallMs, ctx, before, { throughput: (n / wallMs) * 1000 });
}

/** 2. Concurrent image submits from one account: throughput and latency under load. */
export async function imageConcurrent(ctx: Context, concurrency: number): Promise<ScenarioResult> {
  const { total } = ctx.sizes.imageConcurrent;
  const warmup = concurrency;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: total + warmup });
  await runPool(warmup, concurrency, async () => void (await generate(ctx, account, IMAGE, SUCCEEDED)));
  const before = ctx.errors.count;
  const latencies: number[] = [];
  const t = performance.now();
  await runPool(total, concurrency, async () => {
    latencies.push((await generate(ctx, account, IMAGE, SUCCEEDED)).ms);
  });
  const wallMs = performance.now() - t;
  return result(`image.c${concurrency}`, `image concurrency ${concurrency} (total ${total})`, latencies, wallMs, ctx, before, {
    throughput: (total / wallMs) * 1000,
  });
}

interface Settled {
  id: string;
  status: string;
  startedMs: number | null;
  finishedMs: number | null;
}

/** Waits (reading PostgreSQL, not the API, so the rate limit and the API see no extra load) until every id is terminal. */
async function waitSettled(ctx: Context, ids: string[], timeoutMs: number): Promise<Settled[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await ctx.stack.observer.query<{ id: string; status: string; started_ms: number | null; finished_ms: number | null }>(
      `SELECT id, status, (extract(epoch FROM started_at) * 1000)::float8 AS started_ms,
              (extract(epoch FROM finished_at) * 1000)::float8 AS finished_ms
         FROM generations WHERE id = ANY($1::text[])`,
      [ids],
    );
    const rows = r.rows.map((row) => ({ id: row.id, status: row.status, startedMs: row.started_ms, finishedMs: row.finished_ms }));
    if (rows.length === ids.length && rows.every((row) => row.status === 'succeeded' || row.status === 'failed')) return rows;
    if (Date.now() > deadline) {
      ctx.errors.record(`videos not settled within ${timeoutMs} ms: ${rows.filter((row) => row.status !== 'succeeded' && row.status !== 'failed').length} of ${ids.length} still live`);
      return rows;
    }
    await sleep(50);
  }
}

/** Submits videos (admission only: the answer is `queued` or `running`, hold placed) and waits for them all to settle. */
async function videoBatch(ctx: Context, accounts: BenchAccount[], total: number, concurrency: number) {
  const submitted: { id: string; submitAt: number; ms: number }[] = [];
  const latencies: number[] = [];
  const t0 = Date.now();
  const tp = performance.now();
  await runPool(total, concurrency, async (i) => {
    const submitAt = Date.now();
    const r = await generate(ctx, accounts[i % accounts.length]!, VIDEO, ADMITTED);
    latencies.push(r.ms);
    if (r.id) submitted.push({ id: r.id, submitAt, ms: r.ms });
  });
  const admitWallMs = performance.now() - tp;
  const rows = await waitSettled(ctx, submitted.map((s) => s.id), 5 * 60_000);
  const byId = new Map(rows.map((row) => [row.id, row]));
  const settle: number[] = [];
  let failed = 0;
  let lastFinished = t0;
  for (const s of submitted) {
    const row = byId.get(s.id);
    if (!row || row.finishedMs === null) continue;
    if (row.status !== 'succeeded') failed++;
    settle.push(row.finishedMs - s.submitAt);
    lastFinished = Math.max(lastFinished, row.finishedMs);
  }
  if (failed > 0) ctx.errors.record(`${failed} videos ended failed`);
  return { latencies, admitWallMs, submitted, rows, settle: summarise(settle), makespanMs: lastFinished - t0 };
}

/** 3a. Video admission spread over many accounts, so the 5-slot limit per account does not dominate. */
export async function videoSpread(ctx: Context): Promise<ScenarioResult> {
  const { total, accounts: accountCount, concurrency, warmup } = ctx.sizes.videoSpread;
  const perAccount = Math.ceil(total / accountCount);
  const warm = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: warmup });
  await videoBatch(ctx, [warm], warmup, Math.min(concurrency, warmup));
  const accounts: BenchAccount[] = [];
  for (let i = 0; i < accountCount; i++) accounts.push(await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: perAccount }));
  const before = ctx.errors.count;
  const batch = await videoBatch(ctx, accounts, total, concurrency);
  ctx.samples.video.push(...batch.submitted.map((s) => ({ id: s.id, ms: s.ms })));
  return result('video.admission', `video admission c${concurrency} over ${accountCount} accounts (total ${total})`, batch.latencies, batch.admitWallMs, ctx, before, {
    throughput: (total / batch.makespanMs) * 1000,
    settle: batch.settle,
    allSettledMs: batch.makespanMs,
  });
}

/** 3b. One account with many videos: 5 run at once, the rest drain first in first out. */
export async function videoFifo(ctx: Context): Promise<ScenarioResult> {
  const { total, concurrency } = ctx.sizes.videoFifo;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: total });
  const before = ctx.errors.count;
  const batch = await videoBatch(ctx, [account], total, concurrency);
  // Ids are time-ordered and the slot query admits the oldest queued video first: count the
  // pairs that started out of id order (started_at is the claiming transaction's start time).
  const started = batch.rows.filter((r) => r.startedMs !== null).sort((a, b) => (a.id < b.id ? -1 : 1));
  let inversions = 0;
  for (let i = 0; i < started.length; i++) {
    for (let j = i + 1; j < started.length; j++) if (started[j]!.startedMs! < started[i]!.startedMs!) inversions++;
  }
  const maxRunning = maxOverlap(batch.rows);
  if (maxRunning > 5) ctx.errors.record(`one account ran ${maxRunning} videos at once (limit 5)`);
  return result('video.fifo', `video FIFO drain, 1 account × ${total}`, batch.latencies, batch.admitWallMs, ctx, before, {
    throughput: (total / batch.makespanMs) * 1000,
    settle: batch.settle,
    allSettledMs: batch.makespanMs,
    fifo: { inversions, maxRunningAtOnce: maxRunning },
  });
}

/** The most videos whose [started, finished] intervals overlap at one instant. */
function maxOverlap(rows: Settled[]): number {
  const edges: [number, number][] = [];
  for (const r of rows) {
    if (r.startedMs === null || r.finishedMs === null) continue;
    edges.push([r.startedMs, 1], [r.finishedMs, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (now += d));
  return max;
}

/** 4. Paid chat (chat-haiku, no free allowance) one after another. */
export async function chatSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.chatSequential;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: HUGE_BALANCE, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, CHAT, SUCCEEDED));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await sequential(n, () => generate(ctx, account, CHAT, SUCCEEDED), ctx.samples.chat);
  const wallMs = performance.now() - t;
  return result('chat.sequential', `chat paid sequential (N=${n})`, latencies, wallMs, ctx, before, { throughput: (n / wallMs) * 1000 });
}

/** 5. 402 refusals: an account with 0 credits; nothing is held and nothing runs. */
export async function refusal(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.refusal;
  const account = await openAccount(ctx.http, ctx.stack.adminToken, { credits: 0, requests: n + warmup });
  await sequential(warmup, () => generate(ctx, account, IMAGE, { http: 402 }));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    // A 402 names no generation; the profile finds the refused workflows by account instead.
    latencies.push((await generate(ctx, account, IMAGE, { http: 402 })).ms);
  }
  const wallMs = performance.now() - t;
  return result('refusal.402', `402 refusal sequential (N=${n})`, latencies, wallMs, ctx, before, { accountId: account.id });
}
