/**
 * The service's speed and memory targets, in one place. The bench prints PASS or MISS next to
 * each number; a MISS is reported, not fatal (exit code 0), because a slow or busy machine is not
 * a broken service. `docs/benchmark.md` explains how each limit was chosen from measurements on
 * 2 cores.
 */
export interface Target {
  /** A key of the bench's flat metrics, e.g. `image.sequential.p95`. */
  metric: string;
  /** `max`: the value must stay below the limit; `min`: it must reach it. */
  kind: 'max' | 'min';
  limit: number;
  unit: 'ms' | 'MB' | 'gen/s';
  why: string;
}

export const TARGETS: readonly Target[] = [
  {
    metric: 'image.sequential.p95',
    kind: 'max',
    limit: 500,
    unit: 'ms',
    why: 'one image with an instant provider: two workflow tasks and one activity, well within half a second',
  },
  {
    metric: 'image.c20.p95',
    kind: 'max',
    limit: 3000,
    unit: 'ms',
    why: '20 clients at once on 2 cores queue for CPU (Little: 20 / ~10 gen/s = 2 s)',
  },
  {
    metric: 'image.c50.p95',
    kind: 'max',
    limit: 10_000,
    unit: 'ms',
    why: 'far below the API\'s 30 s admission timeout, past which a submit turns into a 503',
  },
  {
    metric: 'image.c50.throughput',
    kind: 'min',
    limit: 8,
    unit: 'gen/s',
    why: '~70 % of what 2 cores give at the measured CPU cost per image',
  },
  {
    metric: 'image.c50.cpuPerOp',
    kind: 'max',
    limit: 250,
    unit: 'ms',
    why: 'CPU per image over the whole stack (API, worker, Temporal, PostgreSQL): capacity = cores / this',
  },
  {
    metric: 'video.admission.p95',
    kind: 'max',
    limit: 300,
    unit: 'ms',
    why: 'placing the hold is all a video submit waits for; it must not queue behind running jobs',
  },
  {
    metric: 'chat.sequential.p95',
    kind: 'max',
    limit: 400,
    unit: 'ms',
    why: 'a paid chat reply takes the image path with nothing to render',
  },
  {
    metric: 'refusal.402.p95',
    kind: 'max',
    limit: 100,
    unit: 'ms',
    why: 'a refusal holds nothing and runs nothing',
  },
  {
    metric: 'stream.sequential.ttfbOverhead.p50',
    kind: 'max',
    limit: 5,
    unit: 'ms',
    why: 'a streamed chat’s first token waits only for the key, the rate limit and the hold transaction, never a workflow task',
  },
  {
    metric: 'stream.sequential.ttfbOverhead.p99',
    kind: 'max',
    limit: 20,
    unit: 'ms',
    why: 'the same at the tail',
  },
  {
    metric: 'memory.peakServiceRss',
    kind: 'max',
    limit: 700,
    unit: 'MB',
    why: 'API + worker, peak over the run; idle is ~350 MB and growth levels off near 600 MB',
  },
];

export type Verdict = 'PASS' | 'MISS' | 'n/a';

export function judge(target: Target, value: number | undefined): Verdict {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  return (target.kind === 'max' ? value < target.limit : value >= target.limit) ? 'PASS' : 'MISS';
}

export function describeTarget(target: Target): string {
  return `${target.kind === 'max' ? '<' : '≥'} ${target.limit} ${target.unit}`;
}
