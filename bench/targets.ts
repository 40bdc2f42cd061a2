/**
 * The service's speed and memory targets, in one place. The bench prints PASS or MISS next to
 * each number; a MISS is reported, not fatal (exit code 0), because a slow or busy machine is not
 * a broken service. `docs/benchmark.md` explains them and, for a miss, where the time goes.
 * The first ten are the money core's (simulator at zero latency, 2 cores; two of them read beside
 * the bare reference and Temporal's floor in the same run), the two `stream.*` ones
 * bound what the service adds to a streamed chat's first token, and the last four are regression
 * guards on figures no other target covers (many clients, a paid chat, one account's video queue,
 * peak memory).
 */
export interface Target {
  /** A key of the bench's flat metrics, e.g. `image.sequential.p50`. */
  metric: string;
  /** `max`: the value must not exceed the limit; `min`: it must reach it. */
  kind: 'max' | 'min';
  limit: number;
  unit: 'ms' | 'MB' | 'gen/s' | '× reference' | '× floor';
  why: string;
}

export const TARGETS: readonly Target[] = [
  {
    metric: 'image.sequential.p50',
    kind: 'max',
    limit: 40,
    unit: 'ms',
    why: 'one image with an instant provider, one client: orchestration plus the render',
  },
  {
    metric: 'image.sequential.p50Ratio',
    kind: 'max',
    limit: 1.2,
    unit: '× reference',
    why: 'one image, one client, beside bare Temporal doing the same shape of work in the same run',
  },
  {
    metric: 'video.c1.p50',
    kind: 'max',
    limit: 15,
    unit: 'ms',
    why: 'a video answers once its hold is durable; its workflow starts after the answer',
  },
  {
    metric: 'video.c32.p95',
    kind: 'max',
    limit: 80,
    unit: 'ms',
    why: 'video admission must not queue behind the renders of the videos admitted before it',
  },
  {
    metric: 'refusal.402.p50',
    kind: 'max',
    limit: 5,
    unit: 'ms',
    why: 'a 402 that the hold statement proves: no workflow, one transaction',
  },
  {
    metric: 'image.c20.throughput',
    kind: 'min',
    limit: 60,
    unit: 'gen/s',
    why: 'images per second with 20 clients on 2 cores',
  },
  {
    metric: 'image.c20.throughputRatio',
    kind: 'min',
    limit: 0.9,
    unit: '× reference',
    why: 'within 10 % of bare Temporal doing the same shape of work in the same run',
  },
  {
    metric: 'image.c20.temporalSdkRatio',
    kind: 'max',
    limit: 1.3,
    unit: '× floor',
    why: "what our image's workflow costs Temporal and the SDK (server, its database, the process running it, nothing else of ours), beside Temporal's floor: a workflow completing in its first task",
  },
  {
    metric: 'video.c20.temporalSdkRatio',
    kind: 'max',
    limit: 1.3,
    unit: '× floor',
    why: "what our video's workflow costs Temporal and the SDK (its slot free at once, its activities no-ops), beside Temporal's floor with a timer: a workflow that waits once",
  },
  {
    metric: 'image.c20.cpuLessRender',
    kind: 'max',
    limit: 30,
    unit: 'ms',
    why: 'CPU per image over the whole stack (API, worker, Temporal, PostgreSQL) less the task itself (render and store, measured alone)',
  },
  {
    metric: 'memory.inflight.serviceRss',
    kind: 'max',
    limit: 400,
    unit: 'MB',
    why: 'API + worker with 1,000 videos in flight',
  },
  {
    metric: 'stream.sequential.ttfbOverhead.p50',
    kind: 'max',
    limit: 5,
    unit: 'ms',
    why: 'a streamed chat’s first token waits only for the key, the rate limit and the hold statement, never a workflow task',
  },
  { metric: 'stream.sequential.ttfbOverhead.p99', kind: 'max', limit: 20, unit: 'ms', why: 'the same at the tail' },
  {
    metric: 'image.c50.p95',
    kind: 'max',
    limit: 10_000,
    unit: 'ms',
    why: "regression guard: 50 clients stay far from the API's waits",
  },
  {
    metric: 'chat.sequential.p95',
    kind: 'max',
    limit: 400,
    unit: 'ms',
    why: 'regression guard: a paid chat reply takes the image path with nothing to render',
  },
  {
    metric: 'video.fifo.p95',
    kind: 'max',
    limit: 1000,
    unit: 'ms',
    why: "regression guard: one account's 50 videos, its admissions and slot claims all lock its account row (p95 5.1 s before admissions took the account lock in order)",
  },
  {
    metric: 'memory.peakServiceRss',
    kind: 'max',
    limit: 700,
    unit: 'MB',
    why: 'regression guard: API + worker peak over the whole run',
  },
];

export type Verdict = 'PASS' | 'MISS' | 'n/a';

export function judge(target: Target, value: number | undefined): Verdict {
  if (value === undefined || !Number.isFinite(value)) return 'n/a';
  return (target.kind === 'max' ? value <= target.limit : value >= target.limit) ? 'PASS' : 'MISS';
}

export function describeTarget(target: Target): string {
  return `${target.kind === 'max' ? '≤' : '≥'} ${target.limit} ${target.unit}`;
}
