import { EUR_PER_MC } from '../money';
import type { Queryable } from './pool';

export const MARGIN_GROUPS = ['model', 'upstream', 'day'] as const;
export type MarginGroup = (typeof MARGIN_GROUPS)[number];

export interface MarginRow {
  /** The model id, the upstream's name (`simulator` for runs on it), or the UTC day (YYYY-MM-DD). */
  key: string;
  generations: number;
  /** What the ledger charged, in EUR (1 credit = 0.01 EUR). */
  revenueEur: number;
  /** What the serving upstreams cost us, in EUR, where their cost is configured. */
  costEur: number;
  marginEur: number;
  /** Generations with no configured cost (the simulator, or an upstream without costEur). */
  uncosted: number;
}

const KEYS: Record<MarginGroup, string> = {
  model: 'g.model',
  upstream: `COALESCE(u.served_by, 'simulator')`,
  day: `to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
};

/** Rounds money to a millionth of a euro: sums of numeric costs stay exact at what the report shows. */
const eur = (x: number): number => Math.round(x * 1e6) / 1e6;

/**
 * Revenue, cost and margin of the generations created in [from, to): revenue from the ledger's
 * charge entries (so the report sums to the ledger), cost from the routing record. A generation
 * counts when it was charged or cost us something (a reply that failed after its first token
 * costs the upstream's tokens and earns nothing).
 */
export async function marginReport(
  q: Queryable,
  groupBy: MarginGroup,
  from: Date,
  to: Date,
): Promise<{ rows: MarginRow[]; total: Omit<MarginRow, 'key'> }> {
  const r = await q.query<{ key: string; generations: number; revenue_mc: number; cost_eur: string; uncosted: number }>(
    `SELECT ${KEYS[groupBy]} AS key, count(*)::int AS generations,
            COALESCE(sum(c.amount_mc), 0)::bigint AS revenue_mc,
            COALESCE(sum(u.cost_eur), 0)::text AS cost_eur,
            count(*) FILTER (WHERE u.cost_eur IS NULL)::int AS uncosted
       FROM generations g
       LEFT JOIN (SELECT generation_id, sum(amount_mc) AS amount_mc FROM ledger_entries WHERE entry = 'charge' GROUP BY generation_id) c
              ON c.generation_id = g.id
       LEFT JOIN generation_upstreams u ON u.generation_id = g.id
      WHERE g.created_at >= $1 AND g.created_at < $2 AND (c.amount_mc > 0 OR u.cost_eur IS NOT NULL)
      GROUP BY 1 ORDER BY 1`,
    [from, to],
  );
  const rows = r.rows.map((row) => {
    const revenueEur = eur(row.revenue_mc * EUR_PER_MC);
    const costEur = eur(Number(row.cost_eur));
    return {
      key: row.key,
      generations: row.generations,
      revenueEur,
      costEur,
      marginEur: eur(revenueEur - costEur),
      uncosted: row.uncosted,
    };
  });
  const sum = (pick: (row: MarginRow) => number) => rows.reduce((s, row) => s + pick(row), 0);
  const revenueEur = eur(sum((x) => x.revenueEur));
  const costEur = eur(sum((x) => x.costEur));
  return {
    rows,
    total: {
      generations: sum((x) => x.generations),
      revenueEur,
      costEur,
      marginEur: eur(revenueEur - costEur),
      uncosted: sum((x) => x.uncosted),
    },
  };
}
