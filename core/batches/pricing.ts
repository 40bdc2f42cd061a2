import { chargeForTokens } from '../catalogue/pricing';
import type { LineGeneration, LineRequest } from '../db/batches';
import type { Millicredits } from '../money';
import type { GenerationKind } from '../vocabulary';

export type { LineGeneration, LineRequest } from '../db/batches';

/**
 * A batch's price: each line at the batch rate of its kind, a percentage of what the same request
 * costs alone (default 50, configured per kind). A per-token chat keeps its billing: the rate per
 * 1,000 output tokens is discounted, the hold covers the output cap at that rate and the settle
 * charges what was produced. Pure; whole millicredits.
 */

/** Percent of the synchronous price, per kind a batch may run. */
export type BatchRates = Readonly<Record<GenerationKind, number>>;

/** A price at `percent` of itself, rounded to the nearest whole millicredit. */
export const atPercent = (mc: Millicredits, percent: number): Millicredits => Math.round((mc * percent) / 100);

/** A priced generation as a batch line runs it: the same request at the batch rate of its kind. */
export function atBatchRate(g: LineGeneration, rates: BatchRates): LineGeneration {
  const percent = rates[g.kind];
  const rate = g.internal.ratePer1kMc;
  if (rate !== undefined && g.params.maxTokens !== undefined) {
    const ratePer1kMc = atPercent(rate, percent);
    return {
      ...g,
      internal: { ...g.internal, ratePer1kMc },
      quoteMc: chargeForTokens(g.params.maxTokens, ratePer1kMc),
    };
  }
  return { ...g, quoteMc: atPercent(g.quoteMc, percent) };
}

export const lineQuoteMc = (r: LineRequest): Millicredits => r.generations.reduce((sum, g) => sum + g.quoteMc, 0);
