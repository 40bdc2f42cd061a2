// What the clients were told must agree with what happened: a key made one generation however
// often it was sent, a 5xx that says "nothing was charged" charged nothing, a refusal left
// nothing behind, and every answer about a generation is what the ledger says.
import type { Outcome } from './client';
import { everyRow } from './ledger-checks';
import type { Check, GenerationFact } from './ledger-checks';
import { TOKEN_PATTERN } from './workload';

const TERMINAL = new Set(['succeeded', 'failed']);

export function answerChecks(outcomes: Outcome[], facts: GenerationFact[], claims: Map<string, string>): Check[] {
  const byToken = new Map<number, GenerationFact[]>();
  const byId = new Map(facts.map((g) => [g.id, g]));
  const strays: string[] = [];
  for (const g of facts) {
    const n = TOKEN_PATTERN.exec(g.prompt)?.[1];
    if (n === undefined) strays.push(g.id);
    else byToken.set(Number(n), [...(byToken.get(Number(n)) ?? []), g]);
  }
  const made = (o: Outcome) => byToken.get(o.request.index) ?? [];
  const keyed = outcomes.filter((o) => o.request.idempotencyKey !== undefined);
  const checks: Check[] = [];

  checks.push({
    name: 'every generation was asked for by a request of the run',
    ok: strays.length === 0,
    detail: strays.length === 0 ? `${facts.length} generations` : `unknown: ${strays.slice(0, 5).join(', ')}`,
  });
  checks.push(
    everyRow(
      'one generation per Idempotency-Key, however often sent',
      keyed,
      (o) => {
        const ids = new Set(o.idsSeen);
        const gens = made(o);
        const claim = claims.get(o.request.idempotencyKey!);
        if (ids.size > 1) return `#${o.request.index}: answered ${[...ids].join(' and ')}`;
        if (gens.length > 1)
          return `#${o.request.index}: ${gens.length} generations (${gens.map((g) => g.id).join(', ')})`;
        if (ids.size === 1 && claim !== [...ids][0])
          return `#${o.request.index}: answered ${[...ids][0]}, key claims ${claim ?? 'nothing'}`;
        if (gens.length === 1 && claim !== gens[0]!.id)
          return `#${o.request.index}: made ${gens[0]!.id}, key claims ${claim ?? 'nothing'}`;
        return undefined;
      },
      `${keyed.length} keyed requests, ${keyed.reduce((n, o) => n + o.attempts.length, 0)} sends`,
    ),
  );
  checks.push(
    everyRow(
      'a request sent once made at most one generation',
      outcomes.filter((o) => o.attempts.length === 1),
      (o) => (made(o).length > 1 ? `#${o.request.index}: ${made(o).length} generations` : undefined),
    ),
  );

  checks.push(
    everyRow(
      'every answer about a generation agrees with the ledger',
      outcomes.filter((o) => o.generation),
      (o) => {
        const answered = o.generation!;
        const g = byId.get(answered.id);
        if (!g) return `#${o.request.index}: answered ${answered.id}, which does not exist`;
        if (!made(o).some((m) => m.id === g.id))
          return `#${o.request.index}: answered ${g.id}, made for another request`;
        if (TERMINAL.has(answered.status) && answered.status !== g.status)
          return `#${o.request.index}: answered ${answered.status}, ledger says ${g.status}`;
        if (TERMINAL.has(answered.status) && Math.round(answered.creditsCharged * 1000) !== g.chargedMc)
          return `#${o.request.index}: answered ${answered.creditsCharged} credits charged, ledger ${g.chargedMc} mc`;
        return undefined;
      },
    ),
  );

  const serverErrors = outcomes.filter(
    (o) =>
      typeof o.final.status === 'number' && o.final.status >= 500 && /nothing was charged/.test(o.final.message ?? ''),
  );
  checks.push(
    everyRow(
      'a final 5xx saying "nothing was charged" charged nothing',
      serverErrors,
      (o) => {
        const charged = made(o).filter((g) => g.status === 'succeeded' || g.chargedMc > 0);
        return charged.length > 0
          ? `#${o.request.index} (${o.final.status} ${o.final.detail ?? ''}): ${charged.map((g) => `${g.id} ${g.status}`).join(', ')}`
          : undefined;
      },
      `${serverErrors.length} requests left with one`,
    ),
  );
  const refused = outcomes.filter(
    (o) => typeof o.final.status === 'number' && o.final.status >= 400 && o.final.status < 500,
  );
  checks.push(
    everyRow(
      'a refusal (4xx) left no generation',
      refused,
      (o) =>
        o.attempts.length === 1 && made(o).length > 0
          ? `#${o.request.index} (${o.final.status} ${o.final.detail ?? ''}): ${made(o)
              .map((g) => g.id)
              .join(', ')}`
          : undefined,
      `${refused.length} refused`,
    ),
  );

  const fives = outcomes.flatMap((o) =>
    [...o.attempts, ...o.polls].filter((a) => typeof a.status === 'number' && a.status >= 500).map((a) => ({ o, a })),
  );
  checks.push(
    everyRow(
      'every 5xx is a 503 with Retry-After',
      fives,
      ({ o, a }) =>
        a.status !== 503 || a.retryAfter === undefined
          ? `#${o.request.index}: ${a.status} ${a.detail ?? ''}${a.retryAfter === undefined ? ' without Retry-After' : ''}`
          : undefined,
      `${fives.length} seen`,
    ),
  );

  checks.push(
    everyRow(
      'sim:fail never succeeds',
      facts.filter((g) => g.prompt.includes('sim:fail')),
      (g) => (g.status === 'succeeded' ? `${g.id} succeeded` : undefined),
    ),
  );
  return checks;
}
