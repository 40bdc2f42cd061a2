import type { MemoryPoint, MemoryReport } from './memory';
import type { KindProfile } from './profile';
import type { ScenarioResult } from './scenarios';
import type { SimulatorCost } from './simulator-cost';
import { mb, round } from './stats';
import type { LatencyStats } from './stats';
import { describeTarget, judge, TARGETS } from './targets';
import type { Verdict } from './targets';

/** Every number as `scenario.stat`, the keys targets refer to. */
export function flatMetrics(scenarios: ScenarioResult[], memory: MemoryReport): Record<string, number> {
  const m: Record<string, number> = {};
  for (const s of scenarios) {
    for (const stat of ['mean', 'p50', 'p95', 'p99', 'max'] as const) m[`${s.id}.${stat}`] = round(s.latency[stat]);
    if (s.throughput !== undefined) m[`${s.id}.throughput`] = round(s.throughput);
    if (s.cpu) m[`${s.id}.cpuPerOp`] = round((s.cpu.bench + s.cpu.worker + s.cpu.temporal + s.cpu.postgres) / s.n);
  }
  m['memory.peakRss'] = mb(memory.peakRss);
  m['memory.peakHeapUsed'] = mb(memory.peakHeapUsed);
  m['memory.peakServiceRss'] = mb(memory.peakServiceRss);
  if (memory.workerPeakRss !== undefined) m['memory.workerPeakRss'] = mb(memory.workerPeakRss);
  return m;
}

export interface TargetResult {
  metric: string;
  value: number | undefined;
  target: string;
  verdict: Verdict;
  why: string;
}

export function evaluateTargets(metrics: Record<string, number>): TargetResult[] {
  return TARGETS.map((t) => ({ metric: t.metric, value: metrics[t.metric], target: describeTarget(t), verdict: judge(t, metrics[t.metric]), why: t.why }));
}

function table(headers: string[], rows: string[][], rightAlign: (col: number) => boolean): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (rightAlign(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return [line(headers), widths.map((w) => '─'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

const f = (v: number | undefined, digits = 1): string => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits));

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
}): string {
  const { scenarios, targets, memory, before, after, profile } = input;
  const out: string[] = [];

  out.push('Latency (ms, measured at the HTTP client, warm-up excluded)');
  out.push(
    table(
      ['scenario', 'n', 'err', 'mean', 'p50', 'p95', 'p99', 'max', 'gen/s', 'targets'],
      scenarios.map((s) => [s.title, String(s.n), String(s.errors), ...stats(s.latency), f(s.throughput), verdictFor(targets, s.id)]),
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
          const notes = s.fifo ? `FIFO inversions ${s.fifo.inversions}, max running at once ${s.fifo.maxRunningAtOnce}` : '';
          return [s.title, ...stats(s.settle!), `${f((s.allSettledMs ?? Number.NaN) / 1000, 2)} s`, notes];
        }),
        (c) => c >= 1 && c <= 6,
      ),
    );
  }

  const withCpu = scenarios.filter((s) => s.cpu);
  if (withCpu.length > 0) {
    const worker = input.workerMode === 'child';
    out.push('', 'CPU during the measured part (ms of CPU per request; machine busy = share of all cores in use)');
    out.push(
      table(
        ['scenario', worker ? 'API+client' : 'API+worker+client', ...(worker ? ['worker'] : []), 'Temporal', 'PostgreSQL', 'stack total', 'other procs', 'machine busy'],
        withCpu.map((s) => {
          const c = s.cpu!;
          const per = (v: number) => f(v / s.n);
          return [s.title, per(c.bench), ...(worker ? [per(c.worker)] : []), per(c.temporal), per(c.postgres), per(c.bench + c.worker + c.temporal + c.postgres), per(c.other), `${f(c.machineBusy * 100, 0)} %`];
        }),
        (c) => c >= 1,
      ),
    );
    const sim = input.simulatorCost;
    out.push(`  of which the simulator's own rendering (measured alone): image ${f(sim.image.cpuMs)} ms, video ${f(sim.video.cpuMs)} ms, chat ${f(sim.chat.cpuMs)} ms of CPU per run`);
  }

  out.push('', `Memory (MB; worker ${input.workerMode}; sampled every ${memory.everyMs} ms, ${memory.samples} samples)`);
  const memRows: string[][] = [
    ['bench process RSS', f(mb(before.rss)), f(mb(after.rss)), f(mb(memory.peakRss)), ''],
    ['bench process heap used (main isolate)', f(mb(before.heapUsed)), f(mb(after.heapUsed)), f(mb(memory.peakHeapUsed)), ''],
  ];
  if (memory.workerPeakRss !== undefined) {
    memRows.push(['worker process RSS (/proc)', f(before.workerRss === undefined ? undefined : mb(before.workerRss)), f(after.workerRss === undefined ? undefined : mb(after.workerRss)), f(mb(memory.workerPeakRss)), `VmHWM ${f(memory.workerHwm === undefined ? undefined : mb(memory.workerHwm))}`]);
  }
  const sum = (p: MemoryPoint) => p.rss + (p.workerRss ?? 0);
  memRows.push(['service RSS (API + worker)', f(mb(sum(before))), f(mb(sum(after))), f(mb(memory.peakServiceRss)), verdictFor(targets, 'memory')]);
  memRows.push(['Temporal dev server RSS (2 s samples)', '', '', f(mb(memory.temporalPeakRss)), '']);
  memRows.push(['PostgreSQL PSS, all processes (2 s)', '', '', f(mb(memory.postgresPeakPss)), '']);
  out.push(table(['', 'before', 'after', 'peak', 'target'], memRows, (c) => c >= 1 && c <= 3));
  out.push(
    table(
      ['peak per phase', 'RSS', 'heap used', ...(memory.workerPeakRss !== undefined ? ['worker RSS'] : [])],
      Object.entries(memory.phases).map(([phase, p]) => [phase, f(mb(p.rss)), f(mb(p.heapUsed)), ...(memory.workerPeakRss !== undefined ? [f(mb(p.workerRss ?? 0))] : [])]),
      (c) => c >= 1,
    ),
  );

  const kinds = Object.entries(profile).filter((e): e is [string, KindProfile] => e[1] !== undefined);
  if (kinds.length > 0) {
    out.push('', 'Where the time goes (means over sampled Temporal histories, ms)');
    out.push(
      table(
        ['kind', 'wfs', 'events', 'wf tasks', 'activities', 'local acts', 'wf task queue/run (1st, 2nd, …)', 'admission', 'workflow', 'orchestration', 'client', 'outside wf'],
        kinds.map(([kind, p]) => [
          kind, String(p.workflows), f(p.events), f(p.workflowTasks), f(p.activityTasks), f(p.localActivities),
          p.workflowTaskByIndex.map((w) => `${f(w.queueMs, 0)}/${f(w.runMs, 0)}`).join(', '), f(p.admissionMs), f(p.durationMs), f(p.orchestrationMs), f(p.clientMs), f(p.outsideWorkflowMs),
        ]),
        (c) => c >= 1 && c !== 6,
      ),
    );
    out.push('  admission: workflow start → hold placed (update completed); orchestration: workflow time not spent running activity tasks');
    out.push('  (local activities run inside workflow tasks); outside wf: client latency less the workflow (video: less the admission)');
    out.push(kinds.map(([kind, p]) => `  ${kind}: ${p.activitySequence.join(' → ')}`).join('\n'));
    out.push(
      table(
        ['kind', 'activity', 'per wf', 'queue', 'run'],
        kinds.flatMap(([kind, p]) => Object.entries(p.activity).map(([name, a]) => [kind, name, f(a.count, 2), f(a.queueMs), f(a.runMs)])),
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
