import { listModels } from '../../core/catalogue/models';
import { RESOLUTIONS, UPSCALE_SCALES } from '../../core/generation/params';
import type { Model } from '../../core/catalogue/models';
import { atPercent } from '../../core/batches/pricing';
import type { BatchRates } from '../../core/batches/pricing';
import { creditsToMc, mcToCredits } from '../../core/money';

/** How a model is billed: per image, per second of video, per chat reply, per 1,000 output tokens (group B chat). */
export type PriceUnit = 'image' | 'second' | 'reply' | '1k_output_tokens';

export interface ModelListing {
  id: string;
  kind: Model['kind'];
  /** Other ids groups A and C accept for this model. */
  aliases: string[];
  /** Ids of group B (the OpenAI-compatible API) priced as this model; group A accepts them too. */
  openaiIds: string[];
  unit: PriceUnit;
  /** Credits per unit when the price has one value (image, reply). */
  price: number | null;
  /** Credits per unit by option when the price varies: per resolution (video), per factor (upscale). */
  prices: Record<string, number | null> | null;
  seconds: { min: number; max: number; default: number } | null;
  defaults: Record<string, string | number>;
  options: Record<string, (string | number)[]>;
  /** In a batch (POST /v1/batches): the percentage of the price charged, and the prices so discounted; null where batches do not run it. */
  batch: { percent: number; price: number | null; prices: Record<string, number | null> | null } | null;
}

/** The catalogue as group A's public model list shows it (DESIGN §6 "Model list (A)"), with the batch prices at `rates`. */
export function modelListing(rates: BatchRates, kind?: Model['kind']): ModelListing[] {
  return listModels()
    .filter((m) => kind === undefined || m.kind === kind)
    .map((m) => withBatchPrice(listingOf(m), m, rates));
}

/** A batch line costs `percent` of the same request alone (core/batches/pricing.ts); upscales do not run in batches. */
function withBatchPrice(l: Omit<ModelListing, 'batch'>, m: Model, rates: BatchRates): ModelListing {
  if (m.kind === 'upscale') return { ...l, batch: null };
  const percent = rates[m.kind];
  const at = (credits: number | null) =>
    credits === null ? null : mcToCredits(atPercent(creditsToMc(credits), percent));
  return {
    ...l,
    batch: {
      percent,
      price: at(l.price),
      prices: l.prices && Object.fromEntries(Object.entries(l.prices).map(([k, v]) => [k, at(v)])),
    },
  };
}

function listingOf(m: Model): Omit<ModelListing, 'batch'> {
  const base = { id: m.id, kind: m.kind, aliases: [...m.aliases], openaiIds: [] as string[] };
  switch (m.kind) {
    case 'image':
      return {
        ...base,
        unit: 'image',
        price: mcToCredits(m.priceMc),
        prices: null,
        seconds: null,
        defaults: { quality: m.defaultQuality, aspect: m.defaultAspect },
        // `features: ["edit"]`: it also edits images (/v1/images/edits, group A's input_images).
        options: { qualities: [...m.qualities], aspects: [...m.aspects], ...(m.edits ? { features: ['edit'] } : {}) },
      };
    case 'video':
      return {
        ...base,
        openaiIds: [...m.openaiIds],
        unit: 'second',
        price: null,
        // A resolution the spec marks with a dash has no rate: listed as null, never offered.
        prices: Object.fromEntries(
          RESOLUTIONS.map((r) => [r, m.ratesMc[r] === undefined ? null : mcToCredits(m.ratesMc[r])]),
        ),
        seconds: { min: m.secondsRange[0], max: m.secondsRange[1], default: m.defaultSeconds },
        defaults: { seconds: m.defaultSeconds, resolution: m.defaultResolution, aspect: m.defaultAspect },
        options: { resolutions: RESOLUTIONS.filter((r) => m.ratesMc[r] !== undefined), aspects: [...m.aspects] },
      };
    case 'chat':
      return {
        ...base,
        unit: m.unit,
        price: mcToCredits(m.priceMc),
        prices: null,
        seconds: null,
        // Per-token models: the output cap held when a request names none, and the largest allowed.
        ...(m.unit === '1k_output_tokens'
          ? { defaults: { max_tokens: m.defaultMaxOutputTokens }, options: { max_tokens: [1, m.maxOutputTokens] } }
          : { defaults: {}, options: {} }),
      };
    case 'upscale':
      return {
        ...base,
        unit: 'image',
        price: null,
        prices: Object.fromEntries(UPSCALE_SCALES.map((s) => [`${s}x`, mcToCredits(m.pricesMc[s])])),
        seconds: null,
        defaults: { scale: m.defaultScale },
        options: { scales: [...UPSCALE_SCALES] },
      };
  }
}
