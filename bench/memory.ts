import { childrenOf, processPss, processRss } from './procfs';

export interface MemoryPoint {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  workerRss?: number;
  referenceRss?: number;
}

export interface PhasePeak {
  rss: number;
  heapUsed: number;
  workerRss?: number;
  /** Bench process + worker child at the same instant. */
  serviceRss: number;
  /** The bare reference's process. */
  referenceRss?: number;
}

export interface MemoryReport {
  samples: number;
  everyMs: number;
  /** The bench process (API, and the worker when it runs in-process, and the load generator). */
  peakRss: number;
  peakHeapUsed: number;
  /** Peak of (bench process + worker child) sampled at the same instant: the service's whole footprint. Equals peakRss in-process. */
  peakServiceRss: number;
  /** The worker child process, when there is one. */
  workerPeakRss?: number;
  workerHwm?: number;
  /** Sampled every 2 s: the Temporal dev server's RSS and PostgreSQL's PSS summed over its processes. */
  temporalPeakRss: number;
  postgresPeakPss: number;
  referencePeakRss?: number;
  phases: Record<string, PhasePeak>;
}

/** Temporal and PostgreSQL change slowly; reading their /proc files less often keeps the sampler cheap. */
const OTHERS_EVERY_MS = 2000;

/** Samples memory every `everyMs` while the bench runs, keeping the peak overall and per phase. */
export function startMemorySampler(opts: {
  everyMs: number;
  /** The worker child, or the whole service's process (then `serviceInBench` is false). */
  workerPid?: number;
  referencePid?: number;
  temporalPid: number;
  postgresPid: number;
  /** False when the bench process is only the load generator: the service's RSS is then the child's alone. */
  serviceInBench?: boolean;
}) {
  const benchCounts = opts.serviceInBench ?? true;
  let samples = 0;
  let peakRss = 0;
  let peakHeapUsed = 0;
  let peakServiceRss = 0;
  let workerPeakRss = 0;
  let temporalPeakRss = 0;
  let postgresPeakPss = 0;
  let referencePeakRss = 0;
  let phase = 'idle';
  const phases: Record<string, PhasePeak> = {};
  let busy = false;
  let tick = 0;

  const sampleOthers = async () => {
    const temporal = await processRss(opts.temporalPid);
    if (temporal) temporalPeakRss = Math.max(temporalPeakRss, temporal.rss);
    let total = 0;
    for (const pid of [opts.postgresPid, ...(await childrenOf(opts.postgresPid))]) total += await processPss(pid);
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
      const p = (phases[phase] ??= { rss: 0, heapUsed: 0, serviceRss: 0 });
      p.rss = Math.max(p.rss, m.rss);
      p.heapUsed = Math.max(p.heapUsed, m.heapUsed);
      let service = benchCounts ? m.rss : 0;
      if (opts.workerPid !== undefined) {
        const w = await processRss(opts.workerPid);
        if (w) {
          workerPeakRss = Math.max(workerPeakRss, w.rss);
          p.workerRss = Math.max(p.workerRss ?? 0, w.rss);
          service += w.rss;
        }
      }
      peakServiceRss = Math.max(peakServiceRss, service);
      p.serviceRss = Math.max(p.serviceRss, service);
      if (opts.referencePid !== undefined) {
        const r = await processRss(opts.referencePid);
        if (r) {
          referencePeakRss = Math.max(referencePeakRss, r.rss);
          p.referenceRss = Math.max(p.referenceRss ?? 0, r.rss);
        }
      }
      if (tick++ % Math.max(1, Math.round(OTHERS_EVERY_MS / opts.everyMs)) === 0) await sampleOthers();
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
      const w = opts.workerPid === undefined ? undefined : await processRss(opts.workerPid);
      const r = opts.referencePid === undefined ? undefined : await processRss(opts.referencePid);
      return {
        rss: m.rss,
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        external: m.external,
        ...(w ? { workerRss: w.rss } : {}),
        ...(r ? { referenceRss: r.rss } : {}),
      };
    },
    async stop(): Promise<MemoryReport> {
      clearInterval(timer);
      await sample();
      await sampleOthers();
      const w = opts.workerPid === undefined ? undefined : await processRss(opts.workerPid);
      return {
        samples,
        everyMs: opts.everyMs,
        peakRss,
        peakHeapUsed,
        peakServiceRss,
        ...(opts.workerPid === undefined ? {} : { workerPeakRss, ...(w ? { workerHwm: w.hwm } : {}) }),
        temporalPeakRss,
        postgresPeakPss,
        ...(opts.referencePid === undefined ? {} : { referencePeakRss }),
        phases,
      };
    },
  };
}

export type MemorySampler = ReturnType<typeof startMemorySampler>;
