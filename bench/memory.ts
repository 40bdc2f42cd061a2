import { readdir, readFile } from 'node:fs/promises';

/** Memory of one process from /proc (Linux), in bytes; undefined once it is gone. */
async function procStatus(pid: number): Promise<{ rss: number; hwm: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

/**
 * Proportional set size: shared pages are split between the processes that map them, so the sum
 * over PostgreSQL's backends does not count shared_buffers once per backend as RSS would.
 */
async function pss(pid: number): Promise<number> {
  try {
    const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
  } catch {
    return (await procStatus(pid))?.rss ?? 0;
  }
}

/** The process and everything below it (PostgreSQL forks a backend per connection). */
async function processTree(root: number): Promise<number[]> {
  const parents = new Map<number, number[]>();
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = parents.get(ppid) ?? [];
      list.push(Number(entry));
      parents.set(ppid, list);
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(parents.get(pid) ?? []));
  }
  return out;
}

export interface MemoryPoint {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  workerRss?: number;
}

export interface PhasePeak {
  rss: number;
  heapUsed: number;
  workerRss?: number;
}

export interface MemoryReport {
  samples: number;
  everyMs: number;
  /** The bench process (API, and the worker when it runs in-process, and the load generator). */
  peakRss: number;
  peakHeapUsed: number;
  /** The worker child process, when there is one. */
  workerPeakRss?: number;
  workerHwm?: number;
  /** Sampled once a second: the Temporal dev server's RSS and PostgreSQL's PSS summed over its processes. */
  temporalPeakRss: number;
  postgresPeakPss: number;
  phases: Record<string, PhasePeak>;
}

/** Samples memory every `everyMs` while the bench runs, keeping the peak overall and per phase. */
export function startMemorySampler(opts: { everyMs: number; workerPid?: number; temporalPid: number; postgresPid: number }) {
  let samples = 0;
  let peakRss = 0;
  let peakHeapUsed = 0;
  let workerPeakRss = 0;
  let temporalPeakRss = 0;
  let postgresPeakPss = 0;
  let phase = 'idle';
  const phases: Record<string, PhasePeak> = {};
  let busy = false;
  let tick = 0;

  const sampleOthers = async () => {
    const temporal = await procStatus(opts.temporalPid);
    if (temporal) temporalPeakRss = Math.max(temporalPeakRss, temporal.rss);
    let total = 0;
    for (const pid of await processTree(opts.postgresPid)) total += await pss(pid);
    postgresPeakPss = Math.max(postgresPeakPss, total);
  };

  const sample = async () => {
    if (busy) return;
    busy = true;
    try {
      const m = process.memoryUsage();
      samples++;
      peakRss = Math.max(peakRss, m.rss);
      peakHeapUsed = Math.max(peakHeapUsed, m.heapUsed);
      const p = (phases[phase] ??= { rss: 0, heapUsed: 0 });
      p.rss = Math.max(p.rss, m.rss);
      p.heapUsed = Math.max(p.heapUsed, m.heapUsed);
      if (opts.workerPid !== undefined) {
        const w = await procStatus(opts.workerPid);
        if (w) {
          workerPeakRss = Math.max(workerPeakRss, w.rss);
          p.workerRss = Math.max(p.workerRss ?? 0, w.rss);
        }
      }
      if (tick++ % Math.max(1, Math.round(1000 / opts.everyMs)) === 0) await sampleOthers();
    } finally {
      busy = false;
    }
  };

  const timer = setInterval(() => void sample(), opts.everyMs);
  timer.unref();
  void sample();

  return {
    /** Attributes the following samples to a phase (a scenario). */
    phase(name: string): void {
      phase = name;
    },
    async now(): Promise<MemoryPoint> {
      const m = process.memoryUsage();
      const w = opts.workerPid === undefined ? undefined : await procStatus(opts.workerPid);
      return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, ...(w ? { workerRss: w.rss } : {}) };
    },
    async stop(): Promise<MemoryReport> {
      clearInterval(timer);
      await sample();
      await sampleOthers();
      const w = opts.workerPid === undefined ? undefined : await procStatus(opts.workerPid);
      return {
        samples,
        everyMs: opts.everyMs,
        peakRss,
        peakHeapUsed,
        ...(opts.workerPid === undefined ? {} : { workerPeakRss, ...(w ? { workerHwm: w.hwm } : {}) }),
        temporalPeakRss,
        postgresPeakPss,
        phases,
      };
    },
  };
}

export type MemorySampler = ReturnType<typeof startMemorySampler>;
