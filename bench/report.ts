import type { MemoryPoint, MemoryReport } from './memory';
import type { KindProfile } from './profile';
import type { ScenarioResult } from './scenarios';
import type { SimulatorCost } from './simulator-cost';
import { mb, round } from './stats';
import type { LatencyStats } from './stats';
import { describeTarget, judge, TARGETS } from './targets';
import type { Verdict } from './targets';

/** Every number as `scenario.stat`, the keys targets refer to. */
export function flatMetrics(
  scenarios: ScenarioResult[],
  memory: MemoryReport,
  simulatorCost: SimulatorCost,
  serviceInBench: boolean,
): Record<string, number> {
  const m: Record<string, number> = {};
  for (const s of scenarios) {
    for (const stat of ['mean', 'p50', 'p95', 'p99', 'max'] as const) m[`${s.id}.${stat}`] = round(s.latency[stat]);
    if (s.throughput !== undefined) m[`${s.id}.throughput`] = round(s.throughput);
    if (s.cpu) {
      const c = s.cpu;
      m[`${s.id}.cpuPerOp`] = round((c.bench + c.worker + c.reference + c.temporal + c.postgres + c.temporalDb) / s.n);
      // The service's (or the reference's) own processes; with the service in the bench process
      // the load generator is counted in too, on both sides.
      m[`${s.id}.cpuProcesses`] = round(((serviceInBench ? c.bench : 0) + c.worker + c.reference) / s.n);
      m[`${s.id}.cpuClient`] = round(c.bench / s.n);
      m[`${s.id}.cpuTemporal`] = round(c.temporal / s.n);
      m[`${s.id}.cpuTemporalDb`] = round(c.temporalDb / s.n);
      m[`${s.id}.cpuPostgres`] = round(c.postgres / s.n);
      // What a workflow costs Temporal and the SDK when nothing else runs around it (the floor, our
      // workflow alone): the server, its database and the reference process.
      m[`${s.id}.cpuTemporalSdk`] = round((c.temporal + c.temporalDb + c.reference) / s.n);
    }
    if (s.wal) {
      m[`${s.id}.rowsPostgres`] = round(s.wal.ours.rows / s.n, 2);
      m[`${s.id}.commitsPostgres`] = round(s.wal.ours.commits / s.n, 2);
      if (s.wal.temporal) {
        m[`${s.id}.rowsTemporalDb`] = round(s.wal.temporal.rows / s.n, 2);
        m[`${s.id}.commitsTemporalDb`] = round(s.wal.temporal.commits / s.n, 2);
        m[`${s.id}.walKbTemporalDb`] = round(s.wal.temporal.bytes / s.n / 1024, 2);
      }
    }
    if (s.inFlight) m[`${s.id}.maxInFlight`] = s.inFlight.max;
  }
  const ratioOf = (key: string, a: string, b: string) => {
    const [x, y] = [m[a], m[b]];
    if (x !== undefined && y !== undefined && y > 0) m[key] = round(x / y, 2);
  };
  ratioOf('image.sequential.p50Ratio', 'image.sequential.p50', 'ref.image.sequential.p50');
  for (const c of [20, 50]) {
    ratioOf(`image.c${c}.throughputRatio`, `image.c${c}.throughput`, `ref.image.c${c}.throughput`);
    ratioOf(`image.c${c}.temporalSdkRatio`, `shape.image.c${c}.cpuTemporalSdk`, `floor.c${c}.cpuTemporalSdk`);
    ratioOf(`image.c${c}.temporalRatio`, `image.c${c}.cpuTemporal`, `floor.c${c}.cpuTemporal`);
    const cpu = m[`image.c${c}.cpuPerOp`];
    if (cpu !== undefined) m[`image.c${c}.cpuLessRender`] = round(cpu - simulatorCost.image.cpuMs);
  }
  ratioOf('video.c20.temporalSdkRatio', 'shape.video.c20.cpuTemporalSdk', 'floor.timer.c20.cpuTemporalSdk');
  m.serviceInBench = serviceInBench ? 1 : 0;
  m['sim.image.cpuMs'] = simulatorCost.image.cpuMs;
  m['sim.video.cpuMs'] = simulatorCost.video.cpuMs;
  m['memory.peakRss'] = mb(memory.peakRss);
  m['memory.peakHeapUsed'] = mb(memory.peakHeapUsed);
  m['memory.peakServiceRss'] = mb(memory.peakServiceRss);
  if (memory.workerPeakRss !== undefined) m['memory.workerPeakRss'] = mb(memory.workerPeakRss);
  const inflight = memory.phases.inflight;
  if (inflight) m['memory.inflight.serviceRss'] = mb(inflight.serviceRss);
  const refInflight = memory.phases['ref.inflight'];
  if (refInflight?.referenceRss !== undefined) m['memory.inflight.referenceRss'] = mb(refInflight.referenceRss);
  const drain = memory.phases['inflight.drain'];
  if (drain) m['memory.drain.serviceRss'] = mb(drain.serviceRss);
  const refDrain = memory.phases['ref.inflight.drain'];
  if (refDrain?.referenceRss !== undefined) m['memory.drain.referenceRss'] = mb(refDrain.referenceRss);
  return m;
}

interface ComparisonRow {
  label: string;
  service: string;
  reference: string;
  /** Service ÷ reference (for throughput: the service's share of the reference's). */
  ratio: number | undefined;
  target: string;
}

/**
 * The headline: each figure of the service next to the bare reference's, measured in the same run
 * on the same Temporal server and PostgreSQL, and their ratio.
 */
export function comparisonRows(m: Record<string, number>, targets: TargetResult[]): ComparisonRow[] {
  const verdict = (metric: string) => {
    const t = targets.find((x) => x.metric === metric);
    return t ? `${t.target} ${t.verdict}` : '';
  };
  const row = (label: string, ours: string, ref: string, target = '', digits = 1): ComparisonRow => {
    const a = m[ours];
    const b = m[ref];
    return {
      label,
      service: f(a, digits),
      reference: f(b, digits),
      ratio: a !== undefined && b !== undefined && b !== 0 ? a / b : undefined,
      target,
    };
  };
  return [
    row(
      'image, 1 client: p50 (ms)',
      'image.sequential.p50',
      'ref.image.sequential.p50',
      verdict('image.sequential.p50'),
    ),
    row(
      '  the ratio, as its target reads it',
      'image.sequential.p50Ratio',
      '',
      verdict('image.sequential.p50Ratio'),
      2,
    ),
    row('image, 1 client: p95 (ms)', 'image.sequential.p95', 'ref.image.sequential.p95'),
    row('video submit → queued, 1 client: p50 (ms)', 'video.c1.p50', 'ref.video.c1.p50', verdict('video.c1.p50')),
    row('video submit → queued, 32 clients: p95 (ms)', 'video.c32.p95', 'ref.video.c32.p95', verdict('video.c32.p95')),
    row('402, 1 client: p50 (ms)', 'refusal.402.p50', 'ref.refusal.402.p50', verdict('refusal.402.p50')),
    row('402 p50 vs GET /api/credits p50 (ms)', 'refusal.402.p50', 'baseline.p50'),
    row(
      'images/s, 20 clients',
      'image.c20.throughput',
      'ref.image.c20.throughput',
      `${verdict('image.c20.throughput')}; ratio ${verdict('image.c20.throughputRatio')}`,
    ),
    row('images/s, 50 clients', 'image.c50.throughput', 'ref.image.c50.throughput'),
    row('CPU per image, 20 clients, stack (ms)', 'image.c20.cpuPerOp', 'ref.image.c20.cpuPerOp'),
    row(
      '  same, less the task itself (render + store, measured alone) (ms)',
      'image.c20.cpuLessRender',
      'ref.image.c20.cpuPerOp',
      verdict('image.c20.cpuLessRender'),
    ),
    row(
      m.serviceInBench
        ? '  of which API + worker (+ load generator) (ms)'
        : "  of which the service's process: API + workers (ms)",
      'image.c20.cpuProcesses',
      'ref.image.c20.cpuProcesses',
    ),
    row('  of which the load generator (ms)', 'image.c20.cpuClient', 'ref.image.c20.cpuClient'),
    row('  of which the Temporal server (ms)', 'image.c20.cpuTemporal', 'ref.image.c20.cpuTemporal'),
    ...(m['image.c20.rowsTemporalDb'] === undefined
      ? []
      : [
          row(
            "  of which the Temporal server's PostgreSQL (ms)",
            'image.c20.cpuTemporalDb',
            'ref.image.c20.cpuTemporalDb',
          ),
          row(
            "  rows written to the Temporal server's PostgreSQL",
            'image.c20.rowsTemporalDb',
            'ref.image.c20.rowsTemporalDb',
          ),
        ]),
    row('  of which our PostgreSQL (ms)', 'image.c20.cpuPostgres', 'ref.image.c20.cpuPostgres'),
    row('  rows written to our PostgreSQL', 'image.c20.rowsPostgres', 'ref.image.c20.rowsPostgres'),
    // Beside Temporal's floor on the same server (reference = the floor).
    row(
      "image, 1 client: p50 beside Temporal's floor, one workflow awaited (ms)",
      'image.sequential.p50',
      'floor.sequential.p50',
    ),
    row("images/s, 20 clients, beside the floor's workflows/s", 'image.c20.throughput', 'floor.c20.throughput'),
    row(
      'Temporal server CPU per image, 20 clients, beside the floor (ms)',
      'image.c20.cpuTemporal',
      'floor.c20.cpuTemporal',
    ),
    ...(m['floor.c20.rowsTemporalDb'] === undefined
      ? []
      : [
          row("  its PostgreSQL's CPU, beside the floor (ms)", 'image.c20.cpuTemporalDb', 'floor.c20.cpuTemporalDb'),
          row(
            '  its PostgreSQL: rows written, beside the floor',
            'image.c20.rowsTemporalDb',
            'floor.c20.rowsTemporalDb',
          ),
          row('  its PostgreSQL: WAL (kB), beside the floor', 'image.c20.walKbTemporalDb', 'floor.c20.walKbTemporalDb'),
        ]),
    row(
      'Temporal + SDK per image: our workflow alone beside the floor (ms)',
      'shape.image.c20.cpuTemporalSdk',
      'floor.c20.cpuTemporalSdk',
      verdict('image.c20.temporalSdkRatio'),
    ),
    row('CPU per video admitted, 32 clients, stack (ms)', 'video.c32.cpuPerOp', 'ref.video.c32.cpuPerOp'),
    row(
      'Temporal + SDK per video: our workflow alone beside the floor with a timer (ms)',
      'shape.video.c20.cpuTemporalSdk',
      'floor.timer.c20.cpuTemporalSdk',
      verdict('video.c20.temporalSdkRatio'),
    ),
    row('CPU per 402, stack (ms)', 'refusal.402.cpuPerOp', 'ref.refusal.402.cpuPerOp'),
    row(
      'peak RSS, videos in flight (MB)',
      'memory.inflight.serviceRss',
      'memory.inflight.referenceRss',
      verdict('memory.inflight.serviceRss'),
    ),
    row('  peak RSS while they all end at once (MB)', 'memory.drain.serviceRss', 'memory.drain.referenceRss'),
    row('  most seen in flight at once', 'inflight.maxInFlight', 'ref.inflight.maxInFlight', '', 0),
  ];
}

export function renderComparison(rows: ComparisonRow[]): string {
  return table(
    ['metric', 'service', 'reference', 'ratio', 'target'],
    rows.map((r) => [
      r.label,
      r.service,
      r.reference,
      r.ratio === undefined || !Number.isFinite(r.ratio) ? '–' : `${r.ratio.toFixed(2)}×`,
      r.target,
    ]),
    (c) => c >= 1 && c <= 3,
  );
}

export interface TargetResult {
  metric: string;
  value: number | undefined;
  target: string;
  verdict: Verdict;
  why: string;
}

export function evaluateTargets(metrics: Record<string, number>): TargetResult[] {
  return TARGETS.map((t) => ({
    metric: t.metric,
    value: metrics[t.metric],
    target: describeTarget(t),
    verdict: judge(t, metrics[t.metric]),
    why: t.why,
  }));
}

export function table(headers: string[], rows: string[][], rightAlign: (col: number) => boolean): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (rightAlign(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export const f = (v: number | undefined, digits = 1): string =>
  v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits);

function verdictFor(targets: TargetResult[], prefix: string): string {
  return targets
    .filter((t) => t.metric.startsWith(`${prefix}.`))
    .map((t) => `${t.metric.slice(prefix.length + 1)} ${t.target} ${t.verdict}`)
    .join('; ');
}

const stats = (l: LatencyStats) => [f(l.mean), f(l.p50), f(l.p95), f(l.p99), f(l.max)];

export function renderReport(input: {
  scenarios: ScenarioResult[];
  targets: TargetResult[];
  memory: MemoryReport;
  before: MemoryPoint;
  after: MemoryPoint;
  profile: Record<string, KindProfile | undefined>;
  workerMode: string;
  simulatorCost: SimulatorCost;
  comparison: ComparisonRow[];
}): string {
  const { scenarios, targets, memory, before, after, profile } = input;
  const out: string[] = [];

  out.push('Service vs bare reference (same run, same Temporal server and PostgreSQL; ratio = service ÷ reference)');
  out.push(renderComparison(input.comparison));
  out.push('');

  out.push('Latency (ms, measured at the HTTP client, warm-up excluded)');
  out.push(
    table(
      ['scenario', 'n', 'err', 'mean', 'p50', 'p95', 'p99', 'max', 'gen/s', 'targets'],
      scenarios.map((s) => [
        s.title,
        String(s.n),
        String(s.errors),
        ...stats(s.latency),
        f(s.throughput),
        verdictFor(targets, s.id),
      ]),
      (c) => c >= 1 && c <= 8,
    ),
  );

  const videos = scenarios.filter((s) => s.settle);
  if (videos.length > 0) {
    out.push('', 'Video settlement (ms from submit to settled in the ledger)');
    out.push(
      table(
        ['scenario', 'mean', 'p50', 'p95', 'p99', 'max', 'all settled after', 'notes'],
        videos.map((s) => {
          const notes = s.fifo
            ? `FIFO inversions ${s.fifo.inversions}, max running at once ${s.fifo.maxRunningAtOnce}`
            : '';
          return [s.title, ...stats(s.settle!), `${f((s.allSettledMs ?? Number.NaN) / 1000, 2)} s`, notes];
        }),
        (c) => c >= 1 && c <= 6,
      ),
    );
  }

  const withCpu = scenarios.filter((s) => s.cpu);
  if (withCpu.length > 0) {
    const worker = input.workerMode !== 'in-process';
    const benchLabel =
      input.workerMode === 'process'
        ? 'load generator'
        : input.workerMode === 'child'
          ? 'API+client'
          : 'API+worker+client';
    out.push('', 'CPU during the measured part (ms of CPU per request; machine busy = share of all cores in use)');
    out.push(
      table(
        [
          'scenario',
          benchLabel,
          ...(worker ? [input.workerMode === 'process' ? 'service' : 'worker'] : []),
          'reference',
          'Temporal',
          'PostgreSQL',
          'stack total',
          'other procs',
          'machine busy',
        ],
        withCpu.map((s) => {
          const c = s.cpu!;
          const per = (v: number) => f(v / s.n);
          return [
            s.title,
            per(c.bench),
            ...(worker ? [per(c.worker)] : []),
            per(c.reference),
            per(c.temporal),
            per(c.postgres),
            per(c.bench + c.worker + c.reference + c.temporal + c.postgres),
            per(c.other),
            `${f(c.machineBusy * 100, 0)} %`,
          ];
        }),
        (c) => c >= 1,
      ),
    );
    const sim = input.simulatorCost;
    out.push(
      input.workerMode === 'process'
        ? '  service: runtime/main.ts (API + workers) as npm start runs it; reference: its HTTP server and worker; the load generator is the bench process'
        : "  on the reference's rows the bench process (first column) is the load generator and the idle service; the reference process is its API and worker",
    );
    out.push(
      `  of which the task itself (the simulator's render and the store's put, measured alone): image ${f(sim.image.cpuMs)} ms, video ${f(sim.video.cpuMs)} ms, chat ${f(sim.chat.cpuMs)} ms of CPU per run`,
    );
  }

  out.push(
    '',
    `Memory (MB; worker ${input.workerMode}; sampled every ${memory.everyMs} ms, ${memory.samples} samples)`,
  );
  const memRows: string[][] = [
    [
      input.workerMode === 'process' ? 'bench process RSS (the load generator)' : 'bench process RSS',
      f(mb(before.rss)),
      f(mb(after.rss)),
      f(mb(memory.peakRss)),
      '',
    ],
    [
      'bench process heap used (main isolate)',
      f(mb(before.heapUsed)),
      f(mb(after.heapUsed)),
      f(mb(memory.peakHeapUsed)),
      '',
    ],
  ];
  if (memory.workerPeakRss !== undefined) {
    memRows.push([
      input.workerMode === 'process' ? 'service process RSS (/proc): API + workers' : 'worker process RSS (/proc)',
      f(before.workerRss === undefined ? undefined : mb(before.workerRss)),
      f(after.workerRss === undefined ? undefined : mb(after.workerRss)),
      f(mb(memory.workerPeakRss)),
      `VmHWM ${f(memory.workerHwm === undefined ? undefined : mb(memory.workerHwm))}`,
    ]);
  }
  // With the service in its own process the bench process is only the load generator.
  const sum = (p: MemoryPoint) => (input.workerMode === 'process' ? 0 : p.rss) + (p.workerRss ?? 0);
  memRows.push([
    'service RSS (API + worker)',
    f(mb(sum(before))),
    f(mb(sum(after))),
    f(mb(memory.peakServiceRss)),
    verdictFor(targets, 'memory'),
  ]);
  if (memory.referencePeakRss !== undefined)
    memRows.push([
      'bare reference process RSS',
      f(before.referenceRss === undefined ? undefined : mb(before.referenceRss)),
      f(after.referenceRss === undefined ? undefined : mb(after.referenceRss)),
      f(mb(memory.referencePeakRss)),
      '',
    ]);
  memRows.push(['Temporal dev server RSS (2 s samples)', '', '', f(mb(memory.temporalPeakRss)), '']);
  memRows.push(['PostgreSQL PSS, all processes (2 s)', '', '', f(mb(memory.postgresPeakPss)), '']);
  out.push(table(['', 'before', 'after', 'peak', 'target'], memRows, (c) => c >= 1 && c <= 3));
  out.push(
    table(
      [
        'peak per phase',
        'RSS',
        'heap used',
        ...(memory.workerPeakRss !== undefined ? ['worker RSS', 'service RSS'] : []),
        'reference RSS',
      ],
      Object.entries(memory.phases).map(([phase, p]) => [
        phase,
        f(mb(p.rss)),
        f(mb(p.heapUsed)),
        ...(memory.workerPeakRss !== undefined ? [f(mb(p.workerRss ?? 0)), f(mb(p.serviceRss))] : []),
        f(p.referenceRss === undefined ? undefined : mb(p.referenceRss)),
      ]),
      (c) => c >= 1,
    ),
  );

  const kinds = Object.entries(profile).filter((e): e is [string, KindProfile] => e[1] !== undefined);
  if (kinds.length > 0) {
    out.push('', 'Where the time goes (means over sampled Temporal histories, ms)');
    out.push(
      table(
        [
          'kind',
          'wfs',
          'events',
          'wf tasks',
          'activities',
          'local acts',
          'wf task queue/run (1st, 2nd, …)',
          'send→start',
          'workflow',
          'orchestration',
          'close→answer',
          'client',
        ],
        kinds.map(([kind, p]) => [
          kind,
          String(p.workflows),
          f(p.events),
          f(p.workflowTasks),
          f(p.activityTasks),
          f(p.localActivities),
          p.workflowTaskByIndex.map((w) => `${f(w.queueMs, 0)}/${f(w.runMs, 0)}`).join(', '),
          f(p.beforeStartMs),
          f(p.durationMs),
          f(p.orchestrationMs),
          f(p.afterCloseMs),
          f(p.clientMs),
        ]),
        (c) => c >= 1 && c !== 6,
      ),
    );
    out.push(
      '  send→start: client sends → workflow execution started (HTTP, auth, pricing, hold transaction, start RPC); orchestration: workflow',
    );
    out.push(
      '  time not spent running activity tasks (local activities run inside workflow tasks); close→answer: workflow closed → the',
    );
    out.push(
      '  client has the answer (result long-poll notification, final read, HTTP). Video: the client waits for the start only.',
    );
    out.push(kinds.map(([kind, p]) => `  ${kind}: ${p.activitySequence.join(' → ')}`).join('\n'));
    out.push(
      table(
        ['kind', 'activity', 'per wf', 'queue', 'run'],
        kinds.flatMap(([kind, p]) =>
          Object.entries(p.activity).map(([name, a]) => [kind, name, f(a.count, 2), f(a.queueMs), f(a.runMs)]),
        ),
        (c) => c >= 2,
      ),
    );
  }

  out.push('', 'Targets');
  out.push(
    table(
      ['metric', 'value', 'target', 'verdict', 'why'],
      targets.map((t) => [t.metric, f(t.value), t.target, t.verdict, t.why]),
      (c) => c === 1,
    ),
  );
  return out.join('\n');
}
