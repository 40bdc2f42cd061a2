import type { LoadResult, LoadTargetName, SequentialResult, TreeName } from './peers';
import { f, table } from './report';
import { round } from './stats';

/** One pass: the same measurements with one kind of upstream. */
export interface PeersPass {
  upstream: string;
  prompt: string;
  sequential: SequentialResult;
  /** By number of clients; the floor and the shape are measured with the fast upstream only. */
  load: Record<string, Partial<Record<LoadTargetName, LoadResult>>>;
}

export interface PeersFigures {
  fast: PeersPass;
  realistic: PeersPass;
  /** CPU ms per second of each tree with nothing to do. */
  idle: Record<TreeName, number>;
  memory: { samples: number; peakMb: Record<TreeName | 'us', number> };
  /** Which Temporal server: the dev server (SQLite inside it) or the server on a PostgreSQL of its own. */
  temporal: string;
}

/** The chat path's goals beside LiteLLM and beside Temporal's floor: met or MISS, reported and never fatal. */
export interface Goal {
  goal: string;
  us: number;
  /** What it is held against: LiteLLM's figure, or the floor's. */
  reference: number;
  verdict: 'met' | 'MISS' | 'n/a';
}

/** Everything a chat costs the stack: API + workers, the Temporal server, its database, ours. */
const ourCpu = (c: Record<TreeName, number>) => c.service + c.temporal + c.temporalDb + c.postgres;
const ourIdle = ourCpu;
/** What a workflow of the reference process costs Temporal and the SDK: the server, its database, the process. */
export const temporalAndSdk = (c: Record<TreeName, number>) => c.temporal + c.temporalDb + c.reference;

export function evaluateGoals(x: PeersFigures): Goal[] {
  const s = x.fast.sequential;
  const at20 = x.fast.load['20'];
  const goal = (
    text: string,
    us: number | undefined,
    reference: number | undefined,
    holds: (us: number, reference: number) => boolean,
  ): Goal => {
    const ok = us !== undefined && reference !== undefined && Number.isFinite(us) && Number.isFinite(reference);
    return {
      goal: text,
      us: us ?? Number.NaN,
      reference: reference ?? Number.NaN,
      verdict: ok ? (holds(us, reference) ? 'met' : 'MISS') : 'n/a',
    };
  };
  const tsdk = (r: LoadResult | undefined) => r && temporalAndSdk(r.cpuPerRequest);
  return [
    goal("whole-reply overhead p50 ≤ LiteLLM's", s.wholeOverhead.us.p50, s.wholeOverhead.litellm.p50, (u, l) => u <= l),
    goal(
      "whole-reply overhead p99 ≤ 1.2× LiteLLM's",
      s.wholeOverhead.us.p99,
      s.wholeOverhead.litellm.p99,
      (u, l) => u <= 1.2 * l,
    ),
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
    goal(
      "API + workers CPU per chat (20 clients; Temporal and databases apart) ≤ 1.2× LiteLLM's",
      at20?.us?.cpuPerRequest.service,
      at20?.litellm?.cpuPerRequest.litellm,
      (u, l) => u <= 1.2 * l,
    ),
    goal(
      "API + workers memory (PSS peak) ≤ LiteLLM's process",
      x.memory.peakMb.service,
      x.memory.peakMb.litellm,
      (u, l) => u <= l,
    ),
    goal(
      "Temporal + SDK per chat (our workflow alone, 20 clients) ≤ 1.05× the floor's",
      tsdk(at20?.shape),
      tsdk(at20?.floor),
      (u, f) => u <= 1.05 * f,
    ),
    goal(
      "chats per second until idle (20 clients) ≥ 0.9× the floor's workflows per second",
      at20?.us?.perSecond,
      at20?.floor?.perSecond,
      (u, f) => u >= 0.9 * f,
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
    rows.push([`${c} clients: req/s until idle again`, r.direct?.perSecond, r.litellm?.perSecond, r.us?.perSecond]);
    rows.push([
      `  answered/s at the client; idle again (s) after`,
      r.direct?.answeredPerSecond,
      r.litellm?.answeredPerSecond,
      r.us?.answeredPerSecond,
      `tail: LiteLLM ${((r.litellm?.drainMs ?? 0) / 1000).toFixed(1)} s, us ${((r.us?.drainMs ?? 0) / 1000).toFixed(1)} s`,
    ]);
    rows.push([`${c} clients: p50 (ms)`, r.direct?.latency.p50, r.litellm?.latency.p50, r.us?.latency.p50]);
  }
  return rows;
}

export function renderPeers(x: PeersFigures, goals: Goal[]): string {
  const verdict = (i: number) => {
    const g = goals[i];
    return g ? `${g.goal.replace(/^[^≤≥]*/, '')} ${g.verdict}` : '';
  };
  const rows = latencyRows(x.fast, verdict);
  const split = x.temporal !== 'dev server';
  for (const [c, r] of Object.entries(x.fast.load)) {
    const u = r.us?.cpuPerRequest;
    rows.push([
      `CPU ms per request, ${c} clients (process trees)`,
      undefined,
      r.litellm?.cpuPerRequest.litellm,
      u && ourCpu(u),
    ]);
    rows.push(
      [
        '  of which API + workers',
        undefined,
        r.litellm?.cpuPerRequest.litellm,
        u?.service,
        c === '20' ? verdict(4) : '',
      ],
      [`  of which the Temporal ${x.temporal}`, undefined, undefined, u?.temporal],
      ...(split
        ? ([["  of which the Temporal server's PostgreSQL", undefined, undefined, u?.temporalDb]] as Row[])
        : []),
      ['  of which our PostgreSQL', undefined, undefined, u?.postgres],
    );
  }
  const m = x.memory.peakMb;
  rows.push(['memory PSS peak (MB; ours summed at one instant)', undefined, m.litellm, m.us]);
  rows.push(
    ['  API + workers', undefined, m.litellm, m.service, verdict(5)],
    ['  Temporal', undefined, undefined, m.temporal],
    ...(split ? ([["  Temporal's PostgreSQL", undefined, undefined, m.temporalDb]] as Row[]) : []),
    ['  our PostgreSQL', undefined, undefined, m.postgres],
  );
  rows.push(['idle CPU (ms per second, nothing to do)', undefined, x.idle.litellm, ourIdle(x.idle)]);
  rows.push(
    ['  API + workers', undefined, undefined, x.idle.service],
    ['  Temporal', undefined, undefined, x.idle.temporal],
    ...(split ? ([["  Temporal's PostgreSQL", undefined, undefined, x.idle.temporalDb]] as Row[]) : []),
    ['  our PostgreSQL', undefined, undefined, x.idle.postgres],
  );

  const out = [
    `Chat path: the upstream directly, LiteLLM's proxy and us (${x.fast.upstream}; ratio = us ÷ LiteLLM; Temporal: the ${x.temporal})`,
    render(rows, true),
    '',
    `Beside Temporal's floor on the same server (per workflow; the floor and our chat's workflow alone run in the reference process)`,
    renderFloor(x, goals),
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
      ['goal', 'us', 'held against', 'ratio', 'verdict'],
      goals.map((g) => [g.goal, f(g.us), f(g.reference), ratio(g.us, g.reference), g.verdict]),
      (c) => c >= 1 && c <= 3,
    ),
  );
  return out.join('\n');
}

/**
 * Per workflow, at each load: the floor, our chat's workflow alone, and the whole service per
 * chat; Temporal + SDK is the server, its database and the process that starts and runs the
 * workflows (for the floor and the shape, the reference process and nothing else).
 */
function renderFloor(x: PeersFigures, goals: Goal[]): string {
  const rows: string[][] = [];
  const cell = (v: number | undefined, digits = 1) => f(v, digits);
  const over = (a: number | undefined, b: number | undefined) => ratio(a, b);
  for (const [c, r] of Object.entries(x.fast.load)) {
    const [fl, sh, us] = [r.floor, r.shape, r.us];
    if (!fl) continue;
    const line = (label: string, get: (l: LoadResult) => number | undefined, digits = 1): string[] => [
      label,
      cell(get(fl), digits),
      cell(sh && get(sh), digits),
      cell(us && get(us), digits),
      over(sh && get(sh), get(fl)),
      over(us && get(us), get(fl)),
    ];
    rows.push(
      line(`${c} clients: workflows (chats) per second until idle`, (l) => l.perSecond),
      line('  Temporal server CPU (ms)', (l) => l.cpuPerRequest.temporal),
      ...(x.temporal !== 'dev server'
        ? [
            line("  its PostgreSQL's CPU (ms)", (l) => l.cpuPerRequest.temporalDb),
            line('  its PostgreSQL: rows written', (l) => l.walPerRequest?.temporal?.rows),
            line('  its PostgreSQL: transactions', (l) => l.walPerRequest?.temporal?.commits),
            line('  its PostgreSQL: WAL (kB)', (l) => (l.walPerRequest?.temporal?.bytes ?? Number.NaN) / 1024),
          ]
        : []),
      [
        '  the process (reference: SDK client + worker; us: API + workers)',
        cell(fl.cpuPerRequest.reference),
        cell(sh?.cpuPerRequest.reference),
        cell(us?.cpuPerRequest.service),
        over(sh?.cpuPerRequest.reference, fl.cpuPerRequest.reference),
        over(us?.cpuPerRequest.service, fl.cpuPerRequest.reference),
      ],
      [
        '  Temporal + SDK (server, its database, the reference process)',
        cell(temporalAndSdk(fl.cpuPerRequest)),
        cell(sh && temporalAndSdk(sh.cpuPerRequest)),
        '',
        over(sh && temporalAndSdk(sh.cpuPerRequest), temporalAndSdk(fl.cpuPerRequest)),
        '',
      ],
      [
        '  our PostgreSQL: rows written; transactions',
        '',
        '',
        us?.walPerRequest?.ours ? `${cell(us.walPerRequest.ours.rows)}; ${cell(us.walPerRequest.ours.commits)}` : '–',
        '',
        '',
      ],
    );
  }
  const g = (i: number) => goals[i] && `${goals[i].goal}: ${goals[i].verdict}`;
  return [
    table(
      ['', 'floor', 'our chat workflow alone', 'us (the service)', 'alone ÷ floor', 'us ÷ floor'],
      rows,
      (c) => c >= 1,
    ),
    g(6),
    g(7),
  ].join('\n');
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
