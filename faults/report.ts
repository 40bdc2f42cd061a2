// The summary of a fault run: what the database holds by kind and status, why generations failed,
// what the clients saw, when each fault happened, and every invariant with its verdict.
import type { FaultEvent } from './chaos';
import type { Attempt, Outcome } from './client';
import type { Check, GenerationFact } from './ledger-checks';

export interface RunFacts {
  settings: string;
  machine: string;
  phases: [name: string, ms: number][];
  facts: GenerationFact[];
  outcomes: Outcome[];
  timeline: FaultEvent[];
  checks: Check[];
}

const KINDS = ['image', 'video', 'chat', 'upscale'] as const;
const STATUSES = ['succeeded', 'failed', 'queued', 'running'] as const;

function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows].map((r) => r.map(String));
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export const duration = (ms: number) =>
  ms >= 60_000 ? `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;

/** What the clients were left with, by kind: refusals, unrecovered 5xx, dropped connections. */
function clientEnds(outcomes: Outcome[], kind: string) {
  const mine = outcomes.filter((o) => o.request.kind === kind);
  const ended = (test: (s: number | 'dropped') => boolean) => mine.filter((o) => test(o.final.status)).length;
  return [
    ended((s) => s === 402),
    ended((s) => typeof s === 'number' && s >= 400 && s < 500 && s !== 402),
    ended((s) => typeof s === 'number' && s >= 500),
    ended((s) => s === 'dropped'),
  ];
}

export function renderReport(r: RunFacts): string {
  const out: string[] = [];
  out.push(
    `Fault run: ${r.settings}`,
    `Machine: ${r.machine}`,
    `Took: ${r.phases.map(([name, ms]) => `${name} ${duration(ms)}`).join(', ')}`,
    '',
  );

  const count = (kind: string, status: string) => r.facts.filter((g) => g.kind === kind && g.status === status).length;
  const rows = KINDS.map((kind) => [
    kind,
    ...STATUSES.map((s) => count(kind, s)),
    r.facts.filter((g) => g.kind === kind).length,
    r.outcomes.filter((o) => o.request.kind === kind).length,
    ...clientEnds(r.outcomes, kind),
  ]);
  const total = ['total', ...rows[0]!.slice(1).map((_, i) => rows.reduce((n, row) => n + Number(row[i + 1]), 0))];
  out.push('Generations (database) by kind × status, and how the requests ended (client)');
  out.push(
    table(
      ['kind', ...STATUSES, 'generations', 'requests', '402', 'other 4xx', 'left 5xx', 'dropped'],
      [...rows, total],
    ),
    '',
  );

  const codes = [...new Set(r.facts.filter((g) => g.status === 'failed').map((g) => g.code ?? '(none)'))].sort();
  out.push('Failed generations by error code');
  out.push(
    table(
      ['code', ...KINDS, 'total'],
      codes.map((code) => {
        const n = KINDS.map(
          (kind) =>
            r.facts.filter((g) => g.kind === kind && g.status === 'failed' && (g.code ?? '(none)') === code).length,
        );
        return [code, ...n, n.reduce((a, b) => a + b, 0)];
      }),
    ),
    '',
  );

  const attempts = r.outcomes.flatMap((o) => o.attempts);
  const polls = r.outcomes.flatMap((o) => o.polls);
  const statusCount = (test: (s: number | 'dropped') => boolean, of: Attempt[] = attempts) =>
    of.filter((a) => test(a.status)).length;
  const serverError = (s: number | 'dropped') => typeof s === 'number' && s >= 500;
  const fiveByStatus = [
    ...new Set(
      [...attempts, ...polls].flatMap((a) => (typeof a.status === 'number' && a.status >= 500 ? [a.status] : [])),
    ),
  ].sort();
  const keyed = r.outcomes.filter((o) => o.request.idempotencyKey !== undefined);
  out.push('Client');
  out.push(
    table(
      ['what', 'count'],
      [
        ['requests (logical)', r.outcomes.length],
        ['  with an Idempotency-Key', keyed.length],
        ['  with sim:fail', r.outcomes.filter((o) => o.request.simFail).length],
        ['sends', attempts.length],
        ['client retries (same key, same body; or after a 429)', attempts.length - r.outcomes.length],
        ['5xx answers to POSTs', statusCount(serverError)],
        ['polls (GET until finished)', polls.length],
        ['5xx answers to polls', statusCount(serverError, polls)],
        [
          '5xx answers by status',
          fiveByStatus.map((s) => `${s}: ${statusCount((x) => x === s, [...attempts, ...polls])}`).join(', ') || 'none',
        ],
        ['dropped connections (POST)', statusCount((s) => s === 'dropped')],
        ['  of which answers lost on purpose', attempts.filter((a) => a.detail?.startsWith('answer lost')).length],
        [
          '402 insufficient_credits',
          attempts.filter((a) => a.status === 402 && a.detail === 'insufficient_credits').length,
        ],
        [
          '402 budget_exceeded (the budgeted key)',
          attempts.filter((a) => a.status === 402 && a.detail === 'budget_exceeded').length,
        ],
        [
          '402 customer_budget_exceeded (the capped customer)',
          attempts.filter((a) => a.status === 402 && a.detail === 'customer_budget_exceeded').length,
        ],
        ['429 rate limited', statusCount((s) => s === 429)],
        [
          'keyed requests recovered by a retry',
          keyed.filter((o) => o.attempts.length > 1 && typeof o.final.status === 'number' && o.final.status < 300)
            .length,
        ],
      ],
    ),
    '',
  );

  out.push('Faults (t = since the first request)');
  out.push(
    ...r.timeline.map((e) => `  t${e.at < 0 ? '' : '+'}${(e.at / 1000).toFixed(1).padStart(6)} s  ${e.what}`),
    '',
  );

  out.push('Invariants');
  out.push(...r.checks.map((c) => `  ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}: ${c.detail}`));
  const failed = r.checks.filter((c) => !c.ok).length;
  out.push(
    '',
    failed === 0 ? `All ${r.checks.length} invariants hold.` : `${failed} of ${r.checks.length} invariants FAILED.`,
  );
  return out.join('\n');
}
