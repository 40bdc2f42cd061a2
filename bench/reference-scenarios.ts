// The bare reference's side of each paired scenario (bench/reference-process.ts serves it): the same
// sizes, clients and measurement as the service's side in bench/scenarios.ts, run right after it
// so both meet the same machine load.
import { performance } from 'node:perf_hooks';
import { runPool } from './http';
import type { Context, ScenarioResult } from './scenarios';
import { holdFor, holdThenDrain, result, sequential, waitForDrain } from './scenarios';

type Kind = 'image' | 'video';

async function openRefAccount(ctx: Context, credits: number): Promise<string> {
  const r = await ctx.ref.request<{ id: string }>('POST', '/accounts', { body: { credits } });
  if (r.status !== 201) throw new Error(`reference account: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

/** One submit to the reference; anything but the expected answer is counted as an error. */
async function refGenerate(
  ctx: Context,
  account: string,
  kind: Kind,
  expect: 200 | 402,
  providerUntil?: number,
): Promise<{ ms: number; id?: string; at: number }> {
  const at = Date.now();
  let r;
  try {
    r = await ctx.ref.request<{ generation?: { id: string; status: string } }>('POST', '/generate', {
      body: { kind, account, ...(providerUntil === undefined ? {} : { providerUntil }) },
    });
  } catch (err) {
    if (ctx.ref.stop.aborted) throw err;
    ctx.errors.record(`reference POST /generate: ${(err as Error).message}`);
    return { ms: Number.NaN, at };
  }
  if (r.status !== expect)
    ctx.errors.record(
      `reference POST /generate ${kind}: expected ${expect}, got ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`,
    );
  return { ms: r.ms, at, ...(r.body.generation ? { id: r.body.generation.id } : {}) };
}

const RICH = 1_000_000_000;

async function liveJobs(ctx: Context, ids: string[]): Promise<number> {
  const r = await ctx.stack.observer.query<{ live: number }>(
    `SELECT count(*)::int AS live FROM bench_bare_jobs WHERE id = ANY($1::text[]) AND status <> 'succeeded'`,
    [ids],
  );
  return r.rows[0]?.live ?? 0;
}

export async function refImageSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.imageSequential;
  const account = await openRefAccount(ctx, RICH);
  await sequential(warmup, () => refGenerate(ctx, account, 'image', 200));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() =>
    sequential(n, () => refGenerate(ctx, account, 'image', 200), ctx.samples.refImage),
  );
  const wallMs = performance.now() - t;
  return result('ref.image.sequential', `reference: image sequential (N=${n})`, latencies, wallMs, ctx, before, {
    throughput: (n / wallMs) * 1000,
    side: 'reference',
  });
}

export async function refImageConcurrent(ctx: Context, concurrency: number): Promise<ScenarioResult> {
  const { total } = ctx.sizes.imageConcurrent;
  const account = await openRefAccount(ctx, RICH);
  await runPool(concurrency, concurrency, async () => void (await refGenerate(ctx, account, 'image', 200)));
  const before = ctx.errors.count;
  const latencies: number[] = [];
  const t = performance.now();
  await ctx.measure(() =>
    runPool(total, concurrency, async () => void latencies.push((await refGenerate(ctx, account, 'image', 200)).ms)),
  );
  const wallMs = performance.now() - t;
  return result(
    `ref.image.c${concurrency}`,
    `reference: image concurrency ${concurrency} (total ${total})`,
    latencies,
    wallMs,
    ctx,
    before,
    { throughput: (total / wallMs) * 1000, side: 'reference' },
  );
}

/** Video submits (`queued` answer) with `concurrency` clients; waits until every workflow has finished. */
export async function refVideo(ctx: Context, concurrency: number): Promise<ScenarioResult> {
  const sizes =
    concurrency === 1
      ? { total: ctx.sizes.videoSequential.n, warmup: ctx.sizes.videoSequential.warmup }
      : ctx.sizes.videoSpread;
  const account = await openRefAccount(ctx, RICH);
  const warm: string[] = [];
  await runPool(sizes.warmup, Math.min(concurrency, sizes.warmup), async () => {
    const r = await refGenerate(ctx, account, 'video', 200);
    if (r.id) warm.push(r.id);
  });
  await waitForDrain(() => liveJobs(ctx, warm), ctx);
  const before = ctx.errors.count;
  const ids: string[] = [];
  const latencies: number[] = [];
  let admitWallMs = 0;
  await ctx.measure(async () => {
    const t = performance.now();
    await runPool(sizes.total, concurrency, async () => {
      const r = await refGenerate(ctx, account, 'video', 200);
      latencies.push(r.ms);
      if (r.id) ids.push(r.id);
    });
    admitWallMs = performance.now() - t;
    await waitForDrain(() => liveJobs(ctx, ids), ctx);
  });
  return result(
    `ref.video.c${concurrency}`,
    `reference: video submit → queued, ${concurrency} client${concurrency === 1 ? '' : 's'} (N=${sizes.total})`,
    latencies,
    admitWallMs,
    ctx,
    before,
    { side: 'reference' },
  );
}

/** The bare 402: one conditional UPDATE that finds no money, and the answer. */
export async function refRefusal(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.refusal;
  const account = await openRefAccount(ctx, 0);
  await sequential(warmup, () => refGenerate(ctx, account, 'image', 402));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() => sequential(n, () => refGenerate(ctx, account, 'image', 402)));
  return result(
    'ref.refusal.402',
    `reference: 402 sequential (N=${n})`,
    latencies,
    performance.now() - t,
    ctx,
    before,
    { side: 'reference' },
  );
}

/** The reference's side of the in-flight scenario: the same number of workflows held in the provider activity. */
export async function refInflight(ctx: Context, submitsPerSecond: number | undefined): Promise<ScenarioResult> {
  const { total, concurrency } = ctx.sizes.inflight;
  const account = await openRefAccount(ctx, RICH);
  const until = Date.now() + holdFor(total, submitsPerSecond);
  const before = ctx.errors.count;
  const ids: string[] = [];
  const latencies: number[] = [];
  const t = performance.now();
  const max = await ctx.measure(async () => {
    await runPool(total, concurrency, async () => {
      const r = await refGenerate(ctx, account, 'video', 200, until);
      latencies.push(r.ms);
      if (r.id) ids.push(r.id);
    });
    return holdThenDrain(ctx, 'ref.inflight', until, () => liveJobs(ctx, ids));
  });
  return result('ref.inflight', `reference: ${total} videos in flight`, latencies, performance.now() - t, ctx, before, {
    inFlight: { max, holdUntil: until },
    side: 'reference',
  });
}

/** One start of a reference workflow on the reference process (`path`: the floor, or our workflow alone). */
async function refStart(ctx: Context, path: string): Promise<number> {
  try {
    const r = await ctx.ref.request<{ id?: string }>('POST', path, { body: { account: 'acct_floor' } });
    if (r.status === 200 && typeof r.body.id === 'string') return r.ms;
    ctx.errors.record(`reference POST ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  } catch (err) {
    if (ctx.ref.stop.aborted) throw err;
    ctx.errors.record(`reference POST ${path}: ${(err as Error).message}`);
  }
  return Number.NaN;
}

/** `total` starts of `path` with `concurrency` clients, as the image scenario of the same size. */
async function refStarts(
  ctx: Context,
  id: string,
  title: string,
  path: string,
  concurrency: number,
  total: number,
): Promise<ScenarioResult> {
  await runPool(concurrency, concurrency, async () => void (await refStart(ctx, path)));
  const before = ctx.errors.count;
  const latencies: number[] = [];
  const t = performance.now();
  await ctx.measure(() => runPool(total, concurrency, async () => void latencies.push(await refStart(ctx, path))));
  const wallMs = performance.now() - t;
  return result(id, title, latencies, wallMs, ctx, before, { throughput: (total / wallMs) * 1000, side: 'reference' });
}

/** Temporal's floor, one client: a workflow that completes in its first task, its result awaited as an image's is. */
export async function floorSequential(ctx: Context): Promise<ScenarioResult> {
  const { n, warmup } = ctx.sizes.imageSequential;
  await sequential(warmup, () => refStart(ctx, '/floor?wait=1').then((ms) => ({ ms })));
  const before = ctx.errors.count;
  const t = performance.now();
  const latencies = await ctx.measure(() => sequential(n, () => refStart(ctx, '/floor?wait=1').then((ms) => ({ ms }))));
  const wallMs = performance.now() - t;
  return result('floor.sequential', `Temporal's floor: one client (N=${n})`, latencies, wallMs, ctx, before, {
    throughput: (n / wallMs) * 1000,
    side: 'reference',
  });
}

/** `path` started and awaited by `concurrency` clients, as many times as the image scenario of that size. */
function refStartsLikeImages(
  ctx: Context,
  id: string,
  title: string,
  path: string,
  concurrency: number,
): Promise<ScenarioResult> {
  const { total } = ctx.sizes.imageConcurrent;
  return refStarts(
    ctx,
    `${id}.c${concurrency}`,
    `${title}: concurrency ${concurrency} (total ${total})`,
    path,
    concurrency,
    total,
  );
}

/** Temporal's floor with `concurrency` clients, results awaited. */
export const floorConcurrent = (ctx: Context, concurrency: number): Promise<ScenarioResult> =>
  refStartsLikeImages(ctx, 'floor', "Temporal's floor", '/floor?wait=1', concurrency);

/** Our image's workflow alone (its activities no-ops), started and awaited as the service does, `concurrency` clients. */
export const shapeImageConcurrent = (ctx: Context, concurrency: number): Promise<ScenarioResult> =>
  refStartsLikeImages(ctx, 'shape.image', "our image's workflow alone", '/shape/image', concurrency);

/** Temporal's floor with a timer (a video's floor: it waits once), `concurrency` clients, results awaited. */
export const floorTimerConcurrent = (ctx: Context, concurrency: number): Promise<ScenarioResult> =>
  refStartsLikeImages(ctx, 'floor.timer', "Temporal's floor with a timer", '/floor/timer?wait=1', concurrency);

/** Our video's workflow alone (its slot free at once, its activities no-ops), awaited to its end, `concurrency` clients. */
export const shapeVideoConcurrent = (ctx: Context, concurrency: number): Promise<ScenarioResult> =>
  refStartsLikeImages(ctx, 'shape.video', "our video's workflow alone", '/shape/video', concurrency);
