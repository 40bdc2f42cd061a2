import type { LoadResult, PeerName, SequentialResult, TreeName } from './peers';
import { f, table } from './report';
import { round } from './stats';

/** One pass: the same measurements with one kind of upstream. */
export interface PeersPass {
  upstream: string;
  prompt: string;
  sequential: SequentialResult;
  /** By number of clients. */
  load: Record<string, Record<PeerName, LoadResult>>;
}

export interface PeersFigures {
  fast: PeersPass;
  realistic: PeersPass;
  /** CPU ms per second of each tree with nothing to do. */
  idle: Record<TreeName, number>;
  memory: { samples: number; peakMb: Record<TreeName | 'us', number> };
}

/** The chat path's goals beside LiteLLM: met or MISS, reported and never fatal. */
export interface Goal {
  goal: string;
  us: number;
  litellm: number;
  verdict: 'met' | 'MISS' | 'n/a';
}

const ourCpu = (c: Record<TreeName, number>) => c.service + c.temporal + c.postgres;
const ourIdle = ourCpu;

export function evaluateGoals(x: PeersFigures): Goal[] {
  const s = x.fast.sequential;
  const load = (c: number) => x.fast.load[String(c)];
  const goal = (
    text: string,
    us: number | undefined,
    litellm: number | undefined,
    holds: (us: number, litellm: number) => boolean,
  ): Goal => {
    const ok = us !== undefined && litellm !== undefined && Number.isFinite(us) && Number.isFinite(litellm);
    return {
      goal: text,
      us: us ?? Number.NaN,
      litellm: litellm ?? Number.NaN,
      verdict: ok ? (holds(us, litellm) ? 'met' : 'MISS') : 'n/a',
    };
  };
  return [
    goal("whole-reply overhead p50 ≤ LiteLLM's", s.wholeOverhead.us.p50, s.wholeOverhead.litellm.p50, (u, l) => u <= l),
    goal("whole-reply overhead p99 ≤ LiteLLM's", s.wholeOverhead.us.p99, s.wholeOverhead.litellm.p99, (u, l) => u <= l),
    goal(
      'streamed first-content overhead p50 ≤ 5 ms',
      s.contentOverhead.us.p50,
      s.contentOverhead.litellm.p50,
      (u) => u <= 5,
    ),
    goal(
      "streamed first-content overhead p50 ≤ 0.5× LiteLLM's",
      s.contentOverhead.us.p50,
      s.contentOverhead.litellm.p50,
      (u, l) => u <= 0.5 * l,
    ),
    goal("throughput at 20 clients ≥ LiteLLM's", load(20)?.us.perSecond, load(20)?.litellm.perSecond, (u, l) => u >= l),
    goal(
      "throughput at 100 clients ≥ LiteLLM's",
      load(100)?.us.perSecond,
      load(100)?.litellm.perSecond,
      (u, l) => u >= l,
    ),
    goal(
      "CPU per request (20 clients, whole tree) ≤ 1.5× LiteLLM's",
      load(20) && ourCpu(load(20)!.us.cpuPerRequest),
      load(20)?.litellm.cpuPerRequest.litellm,
      (u, l) => u <= 1.5 * l,
    ),
    goal(
      "API+workers memory (PSS peak) ≤ LiteLLM's process",
      x.memory.peakMb.service,
      x.memory.peakMb.litellm,
      (u, l) => u <= l,
    ),
  ];
}

const ratio = (us: number | undefined, litellm: number | undefined) =>
  us === undefined || litellm === undefined || !Number.isFinite(us) || !Number.isFinite(litellm) || litellm === 0
    ? '–'
    : `${(us / litellm).toFixed(2)}×`;

type Row = [
  label: string,
  direct: number | undefined,
  litellm: number | undefined,
  us: number | undefined,
  target?: string,
];

function render(rows: Row[], withTarget: boolean): string {
  return table(
    ['', 'direct', 'LiteLLM', 'us', 'us ÷ LiteLLM', ...(withTarget ? ['goal'] : [])],
    rows.map(([label, d, l, u, target]) => [
      label,
      f(d),
      f(l),
      f(u),
      ratio(u, l),
      ...(withTarget ? [target ?? ''] : []),
    ]),
    (c) => c >= 1 && c <= 4,
  );
}

function latencyRows(p: PeersPass, verdict: (i: number) => string): Row[] {
  const s = p.sequential;
  const rows: Row[] = [
    ['whole reply p50 (ms)', s.whole.direct.p50, s.whole.litellm.p50, s.whole.us.p50],
    ['whole reply p99 (ms)', s.whole.direct.p99, s.whole.litellm.p99, s.whole.us.p99],
    [
      'overhead over direct p50 (ms, per-round differences)',
      undefined,
      s.wholeOverhead.litellm.p50,
      s.wholeOverhead.us.p50,
      verdict(0),
    ],
    ['overhead over direct p99 (ms)', undefined, s.wholeOverhead.litellm.p99, s.wholeOverhead.us.p99, verdict(1)],
    ['streamed first content p50 (ms)', s.content.direct.p50, s.content.litellm.p50, s.content.us.p50],
    [
      'first-content overhead p50 (ms)',
      undefined,
      s.contentOverhead.litellm.p50,
      s.contentOverhead.us.p50,
      [verdict(2), verdict(3)].filter(Boolean).join('; '),
    ],
    ['first-content overhead p99 (ms)', undefined, s.contentOverhead.litellm.p99, s.contentOverhead.us.p99],
  ];
  for (const [c, r] of Object.entries(p.load)) {
    rows.push([
      `${c} clients: req/s until idle again`,
      r.direct.perSecond,
      r.litellm.perSecond,
      r.us.perSecond,
      verdict(c === '20' ? 4 : c === '100' ? 5 : -1),
    ]);
    rows.push([
      `  answered/s at the client; idle again (s) after`,
      r.direct.answeredPerSecond,
      r.litellm.answeredPerSecond,
      r.us.answeredPerSecond,
      `tail: LiteLLM ${(r.litellm.drainMs / 1000).toFixed(1)} s, us ${(r.us.drainMs / 1000).toFixed(1)} s`,
    ]);
    rows.push([`${c} clients: p50 (ms)`, r.direct.latency.p50, r.litellm.latency.p50, r.us.latency.p50]);
  }
  return rows;
}

export function renderPeers(x: PeersFigures, goals: Goal[]): string {
  const verdict = (i: number) => {
    const g = goals[i];
    return g ? `${g.goal.replace(/^[^≤≥]*/, '')} ${g.verdict}` : '';
  };
  const rows = latencyRows(x.fast, verdict);
  for (const [c, r] of Object.entries(x.fast.load)) {
    const u = r.us.cpuPerRequest;
    rows.push([
      `CPU ms per request, ${c} clients (process trees)`,
      undefined,
      r.litellm.cpuPerRequest.litellm,
      ourCpu(u),
      c === '20' ? verdict(6) : '',
    ]);
    rows.push(
      ['  of which Temporal', undefined, undefined, u.temporal],
      ['  of which API + workers', undefined, undefined, u.service],
      ['  of which PostgreSQL', undefined, undefined, u.postgres],
    );
  }
  const m = x.memory.peakMb;
  rows.push(['memory PSS peak (MB; ours summed at one instant)', undefined, m.litellm, m.us]);
  rows.push(
    ['  API + workers', undefined, m.litellm, m.service, verdict(7)],
    ['  Temporal', undefined, undefined, m.temporal],
    ['  PostgreSQL', undefined, undefined, m.postgres],
  );
  rows.push(['idle CPU (ms per second, nothing to do)', undefined, x.idle.litellm, ourIdle(x.idle)]);
  rows.push(
    ['  API + workers', undefined, undefined, x.idle.service],
    ['  Temporal', undefined, undefined, x.idle.temporal],
    ['  PostgreSQL', undefined, undefined, x.idle.postgres],
  );

  const out = [
    `Chat path: the upstream directly, LiteLLM's proxy and us (${x.fast.upstream}; ratio = us ÷ LiteLLM)`,
    render(rows, true),
  ];
  out.push(
    '',
    `The same with a realistic upstream (${x.realistic.upstream})`,
    render(
      latencyRows(x.realistic, () => ''),
      false,
    ),
  );
  out.push('', shareSentence(x.realistic));
  out.push('', 'Goals (a MISS is reported, not fatal)');
  out.push(
    table(
      ['goal', 'us', 'LiteLLM', 'verdict'],
      goals.map((g) => [g.goal, f(g.us), f(g.litellm), g.verdict]),
      (c) => c === 1 || c === 2,
    ),
  );
  return out.join('\n');
}

/** The overhead as a share of the whole reply's time with the realistic upstream (p50s). */
export function overheadShare(p: PeersPass): { litellm: number; us: number } {
  const d = p.sequential.whole.direct.p50;
  return {
    litellm: round((100 * p.sequential.wholeOverhead.litellm.p50) / d, 1),
    us: round((100 * p.sequential.wholeOverhead.us.p50) / d, 1),
  };
}

function shareSentence(p: PeersPass): string {
  const share = overheadShare(p);
  const small = Math.max(share.us, share.litellm) < 10;
  return (
    `With the realistic upstream a whole reply takes ${f(p.sequential.whole.direct.p50)} ms directly (p50); the overhead is ${f(share.us)} % of that for us and ` +
    `${f(share.litellm)} % for LiteLLM, one request at a time: ${small ? "a small share next to the model's own time" : 'not a small share even here'} (under load, the req/s rows say more).`
  );
}
