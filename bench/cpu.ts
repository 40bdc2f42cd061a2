import { performance } from 'node:perf_hooks';
import { childrenOf, machineCpuMs, processCpuMs } from './procfs';

export interface CpuSnapshot {
  at: number;
  /** The bench process: API, load generator, and the worker when it runs in-process. */
  bench: number;
  worker: number;
  /** The bare reference's process (its HTTP server and worker). */
  reference: number;
  temporal: number;
  /** The postmaster and its backends. */
  postgres: number;
  /** The Temporal server's own PostgreSQL (topology cluster), postmaster and backends; else 0. */
  temporalDb: number;
  machineBusy: number;
  machineTotal: number;
}

export async function cpuSnapshot(pids: {
  temporal: number;
  postgres: number;
  temporalDb?: number | undefined;
  worker?: number;
  reference?: number;
}): Promise<CpuSnapshot> {
  const self = process.cpuUsage();
  const postmaster = async (pid: number | undefined) => {
    if (pid === undefined) return 0;
    let total = await processCpuMs(pid);
    for (const child of await childrenOf(pid)) total += await processCpuMs(child);
    return total;
  };
  const postgres = await postmaster(pids.postgres);
  const temporalDb = await postmaster(pids.temporalDb);
  const machine = await machineCpuMs();
  return {
    at: performance.now(),
    bench: (self.user + self.system) / 1000,
    worker: pids.worker === undefined ? 0 : await processCpuMs(pids.worker),
    reference: pids.reference === undefined ? 0 : await processCpuMs(pids.reference),
    temporal: await processCpuMs(pids.temporal),
    postgres,
    temporalDb,
    machineBusy: machine.busy,
    machineTotal: machine.total,
  };
}

export interface CpuUse {
  wallMs: number;
  /** CPU ms each part of the stack used during the phase. */
  bench: number;
  worker: number;
  reference: number;
  temporal: number;
  postgres: number;
  /** The Temporal server's own PostgreSQL (topology cluster). */
  temporalDb: number;
  /** CPU used on the machine by anything else (other people's processes, the kernel). */
  other: number;
  /** Fraction of the machine's CPU that was busy. */
  machineBusy: number;
}

export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): CpuUse {
  const bench = b.bench - a.bench;
  const worker = b.worker - a.worker;
  const reference = b.reference - a.reference;
  const temporal = b.temporal - a.temporal;
  // A backend that exited in between takes its time with it unless the postmaster reaped it into cutime.
  const postgres = Math.max(0, b.postgres - a.postgres);
  const temporalDb = Math.max(0, b.temporalDb - a.temporalDb);
  const busy = b.machineBusy - a.machineBusy;
  const total = b.machineTotal - a.machineTotal;
  return {
    wallMs: b.at - a.at,
    bench,
    worker,
    reference,
    temporal,
    postgres,
    temporalDb,
    other: Math.max(0, busy - bench - worker - reference - temporal - postgres - temporalDb),
    machineBusy: total > 0 ? busy / total : 0,
  };
}
