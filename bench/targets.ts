/**
 * The service's speed and memory targets, in one place. The bench prints PASS or MISS next to
 * each number; a MISS is reported, not fatal (exit code 0), because a slow machine is not a
 * broken service. `docs/benchmark.md` explains how each limit was chosen.
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
    why: 'an image with an instant provider should come back well within half a second',
  },
  {
    metric: 'image.c50.p95',
    kind: 'max',
    limit: 2000,
    unit: 'ms',
    why: '50 clients at once on 2 cores may queue, but no one should wait more than ~2 s',
  },
  {
    metric: 'image.c50.throughput',
    kind: 'min',
    limit: 25,
    unit: 'gen/s',
    why: 'one machine should carry a few thousand images per minute with an instant provider',
  },
  {
    metric: 'video.admission.p95',
    kind: 'max',
    limit: 300,
    unit: 'ms',
    why: 'placing the hold is all a video submit waits for',
  },
  {
    metric: 'chat.sequential.p95',
    kind: 'max',
    limit: 400,
    unit: 'ms',
    why: 'a paid chat reply takes the same path as an image with less to store',
  },
  {
    metric: 'refusal.402.p95',
    kind: 'max',
    limit: 100,
    unit: 'ms',
    why: 'a refusal holds nothing and runs nothing',
  },
  {
    metric: 'memory.peakServiceRss',
    kind: 'max',
    limit: 600,
    unit: 'MB',
    why: 'API + worker in one process on a small machine',
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
