// The faults, on a fixed schedule measured from the first request: the worker SIGKILLed and
// started again every `workerEveryMs`, PostgreSQL stopped and started once, the Temporal server
// stopped and started once, and any further one-off kills of the plan (the cluster's API and
// provider worker). Every step goes on the timeline.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessStack } from '../deploy/processes/stack';

export interface FaultEvent {
  /** ms since the first request. */
  at: number;
  what: string;
}

export interface Timeline {
  readonly events: FaultEvent[];
  add(what: string): void;
  /** Times count from here on (the first request); what happened during start-up shows before 0. */
  startAt(origin: number): void;
}

export function createTimeline(origin: number, echo: (line: string) => void): Timeline {
  const events: FaultEvent[] = [];
  return {
    events,
    add(what) {
      const event = { at: Date.now() - origin, what };
      events.push(event);
      echo(`t${event.at < 0 ? '' : '+'}${(event.at / 1000).toFixed(1)} s  ${what}`);
    },
    startAt(next) {
      for (const event of events) event.at -= next - origin;
      origin = next;
    },
  };
}

export interface FaultPlan {
  workerEveryMs: number;
  postgresAtMs: number;
  temporalAtMs: number;
  /** How long PostgreSQL and Temporal each stay down. */
  outageMs: number;
  /** No fault starts after this (the end of the submissions). */
  untilMs: number;
  /** Further processes SIGKILLed once each and started again after `outageMs` (the cluster's: an API behind the balancer, a provider worker). */
  kills?: OneKill[];
}

export interface OneKill {
  atMs: number;
  name: string;
  kill: () => Promise<number>;
  start: () => Promise<number>;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Runs the schedule until `untilMs` or `stop`; resolves once every fault it began is over. */
export async function runFaults(
  stack: ProcessStack,
  plan: FaultPlan,
  origin: number,
  timeline: Timeline,
  stop: AbortSignal,
): Promise<void> {
  const until = async (at: number): Promise<boolean> => {
    const wait = origin + at - Date.now();
    if (wait > 0) await sleep(wait, undefined, { signal: stop }).catch(() => undefined);
    return !stop.aborted && at <= plan.untilMs;
  };

  const workerKills = async () => {
    // A kill falls due every period; one that comes while the worker is still starting waits for
    // it to be up, since a worker that never polls has nothing in flight to lose.
    for (let at = plan.workerEveryMs; await until(at); at += plan.workerEveryMs) {
      const pid = await stack.killWorker();
      const down = Date.now();
      timeline.add(`worker SIGKILLed (pid ${pid})`);
      const next = await stack.startWorker();
      timeline.add(`worker polling again (pid ${next}), ${seconds(Date.now() - down)} after the kill`);
    }
  };

  const restart = async (
    at: number,
    name: string,
    stopIt: () => Promise<void>,
    startIt: () => Promise<void>,
    how: string,
  ) => {
    if (!(await until(at))) return;
    timeline.add(`${name}: stopping (${how})`);
    const began = Date.now();
    await stopIt();
    timeline.add(`${name} stopped`);
    await sleep(plan.outageMs);
    timeline.add(`${name}: starting again`);
    await startIt();
    timeline.add(`${name} back, ${seconds(Date.now() - began)} after the stop began`);
  };

  const kill = async ({ atMs, name, kill: killIt, start }: OneKill) => {
    if (!(await until(atMs))) return;
    const pid = await killIt();
    const down = Date.now();
    timeline.add(`${name} SIGKILLed (pid ${pid})`);
    await sleep(plan.outageMs);
    const next = await start();
    timeline.add(`${name} ready again (pid ${next}), ${seconds(Date.now() - down)} after the kill`);
  };

  await Promise.all([
    workerKills(),
    ...(plan.kills ?? []).map(kill),
    restart(
      plan.postgresAtMs,
      'PostgreSQL',
      () => stack.stopPostgres(),
      () => stack.startPostgres(),
      'fast shutdown, same data directory',
    ),
    restart(
      plan.temporalAtMs,
      stack.temporalKind,
      () => stack.stopTemporal(),
      () => stack.startTemporal(),
      stack.temporalKind === 'Temporal dev server' ? 'SIGTERM, same SQLite file' : 'SIGTERM, same PostgreSQL databases',
    ),
  ]);
}
