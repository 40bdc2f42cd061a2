/**
 * Quotes: what a run will cost and with which parameters it will run. Group C charges exactly the
 * quote, so everything that changes the price (model, resolution, clamped seconds) is decided
 * here, once, and handed to the run as `params`. Pure functions; no I/O.
 */
import {
  AUTO_CHAT_ID,
  findImageModel,
  findUpscaleModel,
  resolveModel,
  type ChatModel,
  type VideoModel,
} from './models';
import { RESOLUTIONS, type Resolution, type UpscaleScale } from '../generation/params';
import { InvalidRequestError, UnknownCostError } from '../errors';
import type { Millicredits } from '../money';
import type { Door } from '../vocabulary';

export interface ImageQuote {
  readonly kind: 'image';
  readonly model: string;
  readonly priceMc: Millicredits;
  readonly params: {
    readonly quality: string;
    readonly aspect: string;
    readonly width: number;
    readonly height: number;
    readonly hd?: true;
  };
}

export interface VideoQuote {
  readonly kind: 'video';
  readonly model: string;
  readonly priceMc: Millicredits;
  /** width/height are the preview size of the simulated file, not the nominal resolution. */
  readonly params: {
    readonly seconds: number;
    readonly resolution: Resolution;
    readonly aspect: string;
    readonly width: number;
    readonly height: number;
  };
}

export interface ChatQuote {
  readonly kind: 'chat';
  readonly model: string;
  /** What the client asked for ('auto' when it sent nothing), kept for the record. */
  readonly requestedModel: string;
  /** Per reply: the price. Per token: what the output cap costs, which is what is held. */
  readonly priceMc: Millicredits;
  readonly params: {
    readonly maxPromptChars: number;
    /** Per-token models only: the output cap the hold covers and the rate the settle charges. */
    readonly maxTokens?: number;
    readonly ratePer1kMc?: Millicredits;
  };
}

export interface UpscaleQuote {
  readonly kind: 'upscale';
  readonly model: string;
  readonly priceMc: Millicredits;
  readonly params: { readonly scale: UpscaleScale };
}

const IMAGE_LONG_SIDE = 1024;
const VIDEO_PREVIEW_LONG_SIDE = 320;

/** Images are priced per image whatever their size; these bound what a width/height may ask. */
export const IMAGE_MIN_SIDE = 256;
export const IMAGE_MAX_SIDE = 2048;

export function quoteImage(req: {
  model?: string | undefined;
  quality?: string | undefined;
  aspect?: string | undefined;
  width?: number | undefined;
  height?: number | undefined;
  hd?: boolean | undefined;
}): ImageQuote {
  if (!req.model) throw new InvalidRequestError('model is required for image', 'model');
  const asked = findImageModel(req.model);
  if (!asked) throw new UnknownCostError('image', req.model);
  // Group B's hd (DESIGN §6): the model's high variant where one is listed, else twice its price.
  const model = req.hd && asked.hdVariant ? (findImageModel(asked.hdVariant) ?? asked) : asked;
  const doubled = req.hd === true && model === asked;
  // The spec says quality "falls back to the model default": a wrong value is not worth a refusal.
  const quality =
    req.quality !== undefined && model.qualities.includes(req.quality) ? req.quality : model.defaultQuality;
  // A width and height (group A) ask for a shape as well as a size: the shape is snapped to what
  // the model renders like an aspect, the long side is kept within what we render.
  const sized = req.width !== undefined && req.height !== undefined;
  const aspect = snapAspect(
    req.aspect ?? (sized ? `${req.width}:${req.height}` : undefined),
    model.aspects,
    model.defaultAspect,
  );
  const longSide = sized
    ? Math.min(IMAGE_MAX_SIDE, Math.max(IMAGE_MIN_SIDE, Math.max(req.width!, req.height!)))
    : IMAGE_LONG_SIDE;
  return {
    kind: 'image',
    model: model.id,
    priceMc: doubled ? 2 * model.priceMc : model.priceMc,
    params: { quality, aspect, ...sizeForAspect(aspect, longSide), ...(doubled ? { hd: true } : {}) },
  };
}

/**
 * A video's price: its seconds at its model's rate for its resolution. `seconds` are clamped to the
 * model's range (what a new run or an extension asks), or taken whole (`as-given`: an edit of a
 * source, which is its length however it came to be, an extended one included).
 */
export function quoteVideo(
  req: {
    model?: string | undefined;
    quality?: string | undefined;
    aspect?: string | undefined;
    seconds?: number | undefined;
  },
  door: Door = 'group-c',
  seconds: 'clamped' | 'as-given' = 'clamped',
): VideoQuote {
  if (!req.model) throw new InvalidRequestError('model is required for video', 'model');
  const model = resolveModel('video', req.model, door) as VideoModel | undefined;
  if (!model) throw new UnknownCostError('video', req.model);

  // A resolution the model has no rate for (a dash in the table) cannot be priced, so it gets
  // the model default like any other value the model does not offer.
  const requested = RESOLUTIONS.find((r) => r === req.quality);
  const resolution =
    requested !== undefined && model.ratesMc[requested] !== undefined ? requested : model.defaultResolution;
  const rateMc = model.ratesMc[resolution];
  // Unreachable: the catalogue refuses, at load, a default resolution without a rate.
  if (rateMc === undefined) throw new Error(`catalogue: ${model.id} has no rate for its default ${resolution}`);

  const run = clampSeconds(
    req.seconds,
    model.defaultSeconds,
    seconds === 'clamped' ? model.secondsRange : [1, Number.MAX_SAFE_INTEGER],
  );
  const aspect = snapAspect(req.aspect, model.aspects, model.defaultAspect);
  return {
    kind: 'video',
    model: model.id,
    priceMc: run * rateMc,
    params: { seconds: run, resolution, aspect, ...sizeForAspect(aspect, VIDEO_PREVIEW_LONG_SIDE) },
  };
}

export function quoteChat(
  req: { model?: string | undefined; maxTokens?: number | undefined },
  door: Door = 'group-c',
): ChatQuote {
  const requestedModel = req.model || AUTO_CHAT_ID;
  const model = resolveModel('chat', requestedModel, door) as ChatModel | undefined;
  if (!model) throw new UnknownCostError('chat', requestedModel);
  const base = { kind: 'chat', model: model.id, requestedModel } as const;
  if (model.unit === 'reply')
    return { ...base, priceMc: model.priceMc, params: { maxPromptChars: model.maxPromptChars } };
  // Billed per output token (DESIGN §4): the hold covers the output cap at the model's rate.
  const maxTokens = req.maxTokens ?? model.defaultMaxOutputTokens;
  if (maxTokens > model.maxOutputTokens) {
    throw new InvalidRequestError(
      `maxTokens: ${model.id} produces at most ${model.maxOutputTokens} output tokens; ${maxTokens} were asked for.`,
      'maxTokens',
    );
  }
  return {
    ...base,
    priceMc: chargeForTokens(maxTokens, model.priceMc),
    params: { maxPromptChars: model.maxPromptChars, maxTokens, ratePer1kMc: model.priceMc },
  };
}

/**
 * What `tokens` output tokens cost at `ratePer1kMc` millicredits per 1,000, rounded up to a whole
 * millicredit (a thousandth of a cent): never zero when a token was produced, and never more for
 * fewer tokens, so a charge for what was produced stays within the hold for the cap.
 */
export function chargeForTokens(tokens: number, ratePer1kMc: Millicredits): Millicredits {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`token count out of range: ${tokens}`);
  return Math.ceil((tokens * ratePer1kMc) / 1000);
}

/**
 * The output tokens a per-token reply is charged for: what it produced, never past the `maxTokens`
 * its hold covers (an upstream may ignore the cap). The streamed chat and the provider activity
 * both charge through here, so a reply costs the same whichever ran it.
 */
export function chargedTokens(produced: number, maxTokens: number | undefined): number {
  return Math.min(produced, maxTokens ?? Infinity);
}

/** A per-token reply's charge for `produced` output tokens at its rate, within its hold. */
export function tokenCharge(
  produced: number,
  maxTokens: number | undefined,
  ratePer1kMc: Millicredits,
): { chargeMc: Millicredits; outputTokens: number } {
  const outputTokens = chargedTokens(produced, maxTokens);
  return { chargeMc: chargeForTokens(outputTokens, ratePer1kMc), outputTokens };
}

export function quoteUpscale(req: { model?: string | undefined; scale: UpscaleScale }): UpscaleQuote {
  const model = findUpscaleModel(req.model);
  if (!model) throw new UnknownCostError('upscale', req.model ?? '');
  return { kind: 'upscale', model: model.id, priceMc: model.pricesMc[req.scale], params: { scale: req.scale } };
}

/**
 * Whole seconds only: a run of 5.4 s is billed and run as 5 s rather than charging a fraction
 * of a second the provider will not produce. Rounding comes before clamping so that the value
 * run is always inside the model's range.
 */
function clampSeconds(seconds: number | undefined, fallback: number, [min, max]: readonly [number, number]): number {
  if (seconds === undefined) return fallback;
  if (!Number.isFinite(seconds)) throw new InvalidRequestError('seconds must be a finite number', 'seconds');
  return Math.min(max, Math.max(min, Math.round(seconds)));
}

/**
 * Picks the supported aspect closest to the requested one. Ratios are compared as logarithms so
 * that 2:1 and 1:2 are equally far from 1:1. Ties go to the earlier entry of `supported`.
 * A blank string counts as not given, as HTML forms send one for an untouched field.
 */
export function snapAspect(requested: string | undefined, supported: readonly string[], fallback: string): string {
  if (requested === undefined || requested.trim() === '') return fallback;
  const ratio = parseAspect(requested);
  if (ratio === undefined) throw new InvalidRequestError(`aspect must look like '16:9', got '${requested}'`, 'aspect');
  let best = fallback;
  let bestDistance = Infinity;
  for (const candidate of supported) {
    const candidateRatio = parseAspect(candidate);
    if (candidateRatio === undefined) continue;
    const distance = Math.abs(Math.log(ratio) - Math.log(candidateRatio));
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** 'W:H' with positive numbers (decimals allowed, e.g. '2.39:1'); undefined when malformed. */
function parseAspect(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!match) return undefined;
  const ratio = Number(match[1]) / Number(match[2]);
  return Number.isFinite(ratio) && ratio > 0 ? ratio : undefined;
}

/**
 * Pixel size for an aspect: the long side is `longSide`, the short side is rounded to a multiple
 * of 16, which every image and video encoder accepts (macroblocks are 16 px).
 */
export function sizeForAspect(aspect: string, longSide: number): { width: number; height: number } {
  const ratio = parseAspect(aspect) ?? 1;
  const shortSide = Math.max(16, Math.round((longSide * Math.min(ratio, 1 / ratio)) / 16) * 16);
  return ratio >= 1 ? { width: longSide, height: shortSide } : { width: shortSide, height: longSide };
}

/**
 * Cuts a chat prompt to the model's capacity (counted in UTF-16 code units, JavaScript's string
 * length). The beginning is kept because that is where instructions and the question usually
 * are; what gets cut is the tail of pasted material.
 */
export function capChatPrompt(prompt: string, maxChars: number): { prompt: string; truncated: boolean } {
  if (prompt.length <= maxChars) return { prompt, truncated: false };
  let end = maxChars;
  // Do not split a surrogate pair: half an emoji is not valid text.
  const last = prompt.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { prompt: prompt.slice(0, end), truncated: true };
}

/**
 * Caps a conversation to the model's capacity. A single message is cut like a prompt (its
 * beginning kept). In a longer conversation the system messages and the newest turns matter
 * most, so the oldest other turns are dropped first; the newest message is then cut if it alone
 * is still too long. `prompt` is the conversation as one text, which records and the simulator use.
 */
export function capChatMessages<M extends { role: string; content: string }>(
  messages: readonly M[],
  maxChars: number,
): { messages: M[]; prompt: string; truncated: boolean } {
  const render = (ms: readonly M[]) =>
    ms.length === 1 && ms[0]!.role === 'user' ? ms[0]!.content : ms.map((m) => `${m.role}: ${m.content}`).join('\n');
  let kept = [...messages];
  let truncated = false;
  while (kept.length > 1 && render(kept).length > maxChars) {
    const oldest = kept.findIndex((m, i) => m.role !== 'system' && i < kept.length - 1);
    if (oldest === -1) break;
    kept.splice(oldest, 1);
    truncated = true;
  }
  if (render(kept).length > maxChars) {
    const last = kept[kept.length - 1]!;
    const room = Math.max(0, maxChars - (render(kept).length - last.content.length));
    kept = [...kept.slice(0, -1), { ...last, content: capChatPrompt(last.content, room).prompt }];
    truncated = true;
  }
  return { messages: kept, prompt: render(kept), truncated };
}
