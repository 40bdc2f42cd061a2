import { listModels } from '../catalogue/models';
import type { Model } from '../catalogue/models';
import type { UpstreamConfig } from '../config/upstreams';
import { EUR_PER_MC } from '../money';

export interface LossRoute {
  model: string;
  upstream: string;
  /** The upstream's cost of one unit (an image, a second of video, 1,000 output tokens, a reply's default output), EUR. */
  costEur: number;
  /** The cheapest price we sell that unit for, EUR. */
  priceEur: number;
}

/**
 * Every configured upstream cost above what the model sells its unit for: the cheapest price of
 * the unit (the lowest video rate, the smaller upscale), and for a chat priced per reply the cost
 * of its default output. Flagged at start-up; a run there still runs (prices are the catalogue's).
 */
export function lossRoutes(upstreams: readonly UpstreamConfig[]): LossRoute[] {
  const models = new Map(listModels().map((m) => [m.id, m]));
  const losses: LossRoute[] = [];
  for (const u of upstreams) {
    for (const [id, entry] of Object.entries(u.models)) {
      const model = models.get(id);
      if (typeof entry === 'string' || entry.costEur === undefined || !model) continue;
      const { price, cost } = unitOf(model, entry.costEur);
      if (cost > price) losses.push({ model: id, upstream: u.name, costEur: eur(cost), priceEur: eur(price) });
    }
  }
  return losses;
}

const eur = (x: number): number => Math.round(x * 1e6) / 1e6;

function unitOf(model: Model, costEur: number): { price: number; cost: number } {
  switch (model.kind) {
    case 'image':
      return { price: model.priceMc * EUR_PER_MC, cost: costEur };
    case 'video':
      return { price: Math.min(...Object.values(model.ratesMc)) * EUR_PER_MC, cost: costEur };
    case 'upscale':
      return { price: Math.min(...Object.values(model.pricesMc)) * EUR_PER_MC, cost: costEur };
    case 'chat':
      return model.unit === '1k_output_tokens'
        ? { price: model.priceMc * EUR_PER_MC, cost: costEur }
        : { price: model.priceMc * EUR_PER_MC, cost: (costEur * model.defaultMaxOutputTokens) / 1000 };
  }
}
