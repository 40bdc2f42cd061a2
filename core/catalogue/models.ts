/**
 * The one list of models and prices. The rows below are transcribed from the group C price
 * tables of the spec so they can be checked against it line by line; every amount is converted
 * to millicredits once, here, so pricing is integer arithmetic from then on.
 */
import { creditsToMc, type Millicredits } from '../money';
import type { Resolution, UpscaleScale } from '../generation/params';
import type { Door, GenerationKind } from '../vocabulary';

export interface ImageModel {
  readonly kind: 'image';
  readonly id: string;
  /** Other ids the spec accepts for this model ("Also accepted as"). */
  readonly aliases: readonly string[];
  readonly priceMc: Millicredits;
  readonly aspects: readonly string[];
  readonly defaultAspect: string;
  readonly qualities: readonly string[];
  readonly defaultQuality: string;
  /** Group B prices `quality: "hd"` as this model where one exists (DESIGN §6). */
  readonly hdVariant?: string;
  /** It edits images too (`/v1/images/edits`, group A's `input_images`), priced per image like a generation. */
  readonly edits?: true;
}

export interface VideoModel {
  readonly kind: 'video';
  readonly id: string;
  readonly aliases: readonly string[];
  /** Ids of the OpenAI-compatible group B that are priced as this model (DESIGN §6). */
  readonly openaiIds: readonly string[];
  readonly secondsRange: readonly [min: number, max: number];
  readonly defaultSeconds: number;
  readonly defaultResolution: Resolution;
  /** Per-second rate; a resolution missing here is one the spec marks with a dash. */
  readonly ratesMc: Readonly<Partial<Record<Resolution, Millicredits>>>;
  readonly aspects: readonly string[];
  readonly defaultAspect: string;
}

export interface ChatModel {
  readonly kind: 'chat';
  readonly id: string;
  readonly aliases: readonly string[];
  /**
   * What `priceMc` buys: one reply (group C's models, quoted and charged as one price) or 1,000
   * output tokens (group B's models: the hold covers the output cap, the settle what was produced).
   */
  readonly unit: 'reply' | '1k_output_tokens';
  readonly priceMc: Millicredits;
  /** Input beyond this is cut server-side (spec: "capped to what the model accepts"). */
  readonly maxPromptChars: number;
  /** Output cap when the client sends no max_tokens; group B holds credits for this many. */
  readonly defaultMaxOutputTokens: number;
  /** The most output tokens a client may ask for (max_tokens); more is a 400. */
  readonly maxOutputTokens: number;
}

export interface UpscaleModel {
  readonly kind: 'upscale';
  readonly id: string;
  readonly aliases: readonly string[];
  /** Price of one upscaled image, by factor. */
  readonly pricesMc: Readonly<Record<UpscaleScale, Millicredits>>;
  readonly defaultScale: UpscaleScale;
}

export type Model = ImageModel | VideoModel | ChatModel | UpscaleModel;

// ---------------------------------------------------------------------------------------------
// Image (spec: group C "Image pricing", credits per image)
// ---------------------------------------------------------------------------------------------

/** What a family of image models can be asked for; the spec leaves this model-specific. */
interface ImageProfile {
  readonly aspects: readonly string[];
  readonly qualities: readonly string[];
  readonly defaultQuality: string;
}

const COMMON_ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4'] as const;
const WIDE_ASPECTS = [...COMMON_ASPECTS, '3:2', '2:3', '21:9'] as const;

const STANDARD: ImageProfile = { aspects: COMMON_ASPECTS, qualities: ['standard'], defaultQuality: 'standard' };
const FLEXIBLE: ImageProfile = { ...STANDARD, aspects: WIDE_ASPECTS };
// The upstream gpt-image API only renders square, landscape 3:2 and portrait 2:3. Its 'high'
// quality is sold as its own, dearer rows (gpt-image-1-high, image-gpt-high), so the 6-credit
// row offers only 'low' and 'medium'; otherwise 'high' would be a cheaper way to the same thing.
const GPT_IMAGE: ImageProfile = {
  aspects: ['1:1', '3:2', '2:3'],
  qualities: ['low', 'medium'],
  defaultQuality: 'medium',
};
const GPT_IMAGE_HIGH: ImageProfile = { ...GPT_IMAGE, qualities: ['high'], defaultQuality: 'high' };

function image(
  id: string,
  aliases: readonly string[],
  credits: number,
  profile: ImageProfile,
  extra: { hdVariant?: string; edits?: true } = {},
): ImageModel {
  return { kind: 'image', id, aliases, priceMc: creditsToMc(credits), defaultAspect: '1:1', ...profile, ...extra };
}

/** Models whose upstreams take an image to edit (inpainting, image-to-image), not only a prompt. */
const EDITS = { edits: true } as const;

export const IMAGE_MODELS: readonly ImageModel[] = [
  image('image-flux', ['flux'], 3, STANDARD),
  image('kie-z-image', [], 3, STANDARD),
  image('kie-seedream-4', [], 4, FLEXIBLE, EDITS),
  image('image-flux-dev', [], 5, STANDARD, EDITS),
  image('image-qwen', [], 5, STANDARD, EDITS),
  image('gpt-image-1', ['gpt-image'], 6, GPT_IMAGE, { hdVariant: 'gpt-image-1-high', edits: true }),
  image('image-seedream-3', [], 6, FLEXIBLE),
  image('image-nano-banana', [], 8, FLEXIBLE, EDITS),
  image('image-nano-banana-2', [], 8, FLEXIBLE, EDITS),
  image('image-recraft-v3', [], 9, FLEXIBLE),
  image('image-flux-ultra', [], 12, FLEXIBLE),
  image('image-ideogram-v2', [], 15, FLEXIBLE),
  image('image-nano-pro', ['nano-pro'], 17, FLEXIBLE, EDITS),
  image('gpt-image-1-high', [], 17, GPT_IMAGE_HIGH, EDITS),
  image('image-gpt-high', ['gpt-high'], 22, GPT_IMAGE_HIGH, EDITS),
];

// ---------------------------------------------------------------------------------------------
// Video (spec: group C "Video pricing", credits per second)
// ---------------------------------------------------------------------------------------------

/** One cell of the spec's rate columns: credits per second, or '-' where none is listed. */
type RateCell = number | '-';

const VIDEO_ASPECTS = ['16:9', '9:16', '1:1'] as const;

function video(
  id: string,
  [min, max]: readonly [number, number],
  defaultSeconds: number,
  defaultResolution: Resolution,
  [r480, r720, r1080]: readonly [RateCell, RateCell, RateCell],
  openaiIds: readonly string[] = [],
): VideoModel {
  const ratesMc: Partial<Record<Resolution, Millicredits>> = {};
  if (r480 !== '-') ratesMc['480p'] = creditsToMc(r480);
  if (r720 !== '-') ratesMc['720p'] = creditsToMc(r720);
  if (r1080 !== '-') ratesMc['1080p'] = creditsToMc(r1080);
  // A transcription slip here would only show up as a failed quote in production.
  if (ratesMc[defaultResolution] === undefined || defaultSeconds < min || defaultSeconds > max) {
    throw new Error(`catalogue: video '${id}' has a default outside what it offers`);
  }
  return {
    kind: 'video',
    id,
    aliases: [],
    openaiIds,
    secondsRange: [min, max],
    defaultSeconds,
    defaultResolution,
    ratesMc,
    aspects: VIDEO_ASPECTS,
    defaultAspect: '16:9',
  };
}

// id, seconds range, default seconds and resolution, then credits per second at 480p / 720p / 1080p.
export const VIDEO_MODELS: readonly VideoModel[] = [
  video('wan', [5, 10], 5, '720p', ['-', 10.1, 15.1], ['wan-2.1']),
  video('kling', [5, 10], 5, '720p', [8.5, 8.5, 13], ['kling-2.1-pro']),
  video('kling-3-pro', [3, 15], 10, '720p', [28.1, 35.1, 56.1]),
  video('seedance', [4, 15], 5, '720p', [9.6, 20.6, 51.1]),
  video('seedance-2-fast', [3, 12], 5, '720p', [8, 16.6, 51.1]),
  video('seedance-2-5', [4, 30], 5, '720p', [24, 51, '-']),
  video('seedance-lite', [3, 12], 5, '720p', [2, 3, 6]),
  video('sora', [4, 20], 5, '720p', [7, 12, 67], ['sora-2']),
  video('veo', [4, 8], 5, '720p', [15.1, 18, 56], ['veo-3-fast']),
  video('veo31', [4, 8], 6, '720p', [40.1, 40.1, 40.1]),
  video('hailuo', [6, 10], 6, '720p', [5, 5, 8.2], ['minimax-video-01']),
  video('ltx', [6, 10], 6, '1080p', ['-', '-', 6.1]),
  video('kie-wan-2-5', [5, 10], 5, '720p', [6.1, 6.1, 10.1]),
  video('kie-hailuo-02', [6, 10], 6, '720p', [3, 5, 8]),
  video('kie-seedance-2', [3, 15], 5, '720p', [12, 20.6, 51.1]),
  video('kie-seedance-2-fast', [3, 12], 5, '720p', [10, 16.6, 51.1]),
  video('kie-seedance-2-mini', [3, 12], 5, '720p', [6, 10.3, 20.6]),
  video('kie-seedance-lite', [3, 10], 5, '720p', [4, 6, 11]),
  video('kie-kling-3-turbo', [5, 10], 5, '1080p', [9.1, 9.1, 11.3]),
  video('kie-wan-2-6', [5, 10], 5, '720p', [7.1, 7.1, 10.5], ['wan-2.6']),
  video('kling-25-turbo', [5, 10], 5, '720p', [8.6, 8.6, 8.6]),
];

// ---------------------------------------------------------------------------------------------
// Chat (spec: group C "Chat", credits per reply)
// ---------------------------------------------------------------------------------------------

function chat(id: string, credits: number, maxPromptChars: number, defaultMaxOutputTokens: number): ChatModel {
  return {
    kind: 'chat',
    id,
    aliases: [],
    unit: 'reply',
    priceMc: creditsToMc(credits),
    maxPromptChars,
    defaultMaxOutputTokens,
    maxOutputTokens: 32_768,
  };
}

export const CHAT_MODELS: readonly ChatModel[] = [
  chat('chat-haiku', 1, 32_000, 2_048),
  chat('chat-sonnet', 2, 64_000, 4_096),
  chat('chat-opus', 4, 64_000, 4_096),
];

// ---------------------------------------------------------------------------------------------
// Chat of group B (spec: "Chat ids listed for group B"; "Credits are deducted per output token")
// ---------------------------------------------------------------------------------------------

/**
 * id, credits per 1,000 output tokens, prompt capacity (characters), default and largest output
 * cap (tokens). Rates: the upstream's list price for output in euro cents per 1k tokens, with a
 * margin of about a third, rounded to a tenth of a credit (docs/decisions/0022-per-token-billing.md).
 */
function tokenChat(
  id: string,
  creditsPer1k: number,
  maxPromptChars: number,
  defaultMaxOutputTokens: number,
  maxOutputTokens: number,
): ChatModel {
  return {
    kind: 'chat',
    id,
    aliases: [],
    unit: '1k_output_tokens',
    priceMc: creditsToMc(creditsPer1k),
    maxPromptChars,
    defaultMaxOutputTokens,
    maxOutputTokens,
  };
}

export const OPENAI_CHAT_MODELS: readonly ChatModel[] = [
  tokenChat('claude-fable', 3.5, 400_000, 4_096, 32_000),
  tokenChat('claude-opus', 3.5, 400_000, 4_096, 32_000),
  tokenChat('claude-sonnet', 2, 400_000, 4_096, 64_000),
  tokenChat('claude-haiku', 0.7, 400_000, 4_096, 64_000),
  tokenChat('deepseek-v4-flash', 0.1, 200_000, 4_096, 8_192),
  tokenChat('deepseek-v4-pro', 0.4, 200_000, 4_096, 8_192),
  tokenChat('kimi-k2', 0.4, 200_000, 4_096, 16_384),
  tokenChat('glm-5.1', 0.4, 200_000, 4_096, 16_384),
  tokenChat('llama-3.3', 0.1, 200_000, 2_048, 8_192),
  tokenChat('gemini-pro', 1.6, 800_000, 4_096, 65_536),
  tokenChat('gpt-5.5', 1.5, 400_000, 4_096, 128_000),
  tokenChat('minimax', 0.2, 400_000, 4_096, 32_768),
  tokenChat('grok-4.3', 2, 400_000, 4_096, 32_768),
];
/** When the catalogue took its current shape (unix seconds): the creation date the doors' model lists give every model. */
export const CATALOGUE_CREATED = 1_767_225_600;

/** The model group B's `auto` (or no model) runs: the Claude tier group C's `auto` also picks. */
export const AUTO_OPENAI_CHAT_MODEL_ID = 'claude-haiku';

// ---------------------------------------------------------------------------------------------
// Upscale (not priced by the spec; chosen in docs/decisions/0038-upscale.md)
// ---------------------------------------------------------------------------------------------

export const UPSCALE_MODELS: readonly UpscaleModel[] = [
  {
    kind: 'upscale',
    id: 'upscale',
    aliases: ['upscale-standard'],
    pricesMc: { 2: creditsToMc(2), 4: creditsToMc(4) },
    defaultScale: 2,
  },
  {
    kind: 'upscale',
    id: 'upscale-pro',
    aliases: [],
    pricesMc: { 2: creditsToMc(5), 4: creditsToMc(8) },
    defaultScale: 2,
  },
];
/** The model used when an upscale request names none. */
export const DEFAULT_UPSCALE_MODEL_ID = 'upscale';

/** The id a client sends (or implies by omitting `model`) to let the service choose. */
export const AUTO_CHAT_ID = 'auto';
/** The model the service chooses for `auto`; it also serves the free allowance. */
export const AUTO_CHAT_MODEL_ID = 'chat-haiku';

// ---------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------

/** Indexes a kind by id and alias, refusing a name used twice so a typo cannot shadow a row. */
function indexByName<M extends Model>(
  models: readonly M[],
  names: (m: M) => readonly string[],
): ReadonlyMap<string, M> {
  const index = new Map<string, M>();
  for (const model of models) {
    for (const name of names(model)) {
      if (index.has(name)) throw new Error(`catalogue: ${model.kind} name '${name}' is used twice`);
      index.set(name, model);
    }
  }
  return index;
}

const imageIndex = indexByName(IMAGE_MODELS, (m) => [m.id, ...m.aliases]);
const videoIndex = indexByName(VIDEO_MODELS, (m) => [m.id, ...m.aliases]);
const openaiVideoIndex = indexByName(VIDEO_MODELS, (m) => m.openaiIds);
const chatIndex = indexByName(CHAT_MODELS, (m) => [m.id, ...m.aliases]);
const openaiChatIndex = indexByName(OPENAI_CHAT_MODELS, (m) => [m.id, ...m.aliases]);
const upscaleIndex = indexByName(UPSCALE_MODELS, (m) => [m.id, ...m.aliases]);

// Ids are matched exactly, as the spec and the OpenAI API spell them.
export function findImageModel(idOrAlias: string): ImageModel | undefined {
  return imageIndex.get(idOrAlias);
}

/** Group C video ids only; group B ids go through `findOpenAiVideoModel`. */
export function findVideoModel(idOrAlias: string): VideoModel | undefined {
  return videoIndex.get(idOrAlias);
}

/**
 * The ids of group B's video parameter table (`kling-2.1-pro`, `wan-2.1`, `minimax-video-01`).
 * Kept apart from `findVideoModel` because the spec gives each group its own list of ids.
 */
export function findOpenAiVideoModel(id: string): VideoModel | undefined {
  return openaiVideoIndex.get(id);
}

/** `auto` resolves to the model the service chooses. */
export function findChatModel(idOrAlias: string): ChatModel | undefined {
  return chatIndex.get(idOrAlias === AUTO_CHAT_ID ? AUTO_CHAT_MODEL_ID : idOrAlias);
}

/** Group B's chat ids, billed per output token; `auto` resolves to the model group B picks. */
export function findOpenAiChatModel(id: string): ChatModel | undefined {
  return openaiChatIndex.get(id === AUTO_CHAT_ID ? AUTO_OPENAI_CHAT_MODEL_ID : id);
}

/** `undefined` (no model named) resolves to the default upscaler. */
export function findUpscaleModel(idOrAlias: string | undefined): UpscaleModel | undefined {
  return upscaleIndex.get(idOrAlias ?? DEFAULT_UPSCALE_MODEL_ID);
}

/** Every model, each tagged with its kind, in table order: image, video, chat, upscale. */
export function listModels(): readonly Model[] {
  return [...IMAGE_MODELS, ...VIDEO_MODELS, ...CHAT_MODELS, ...OPENAI_CHAT_MODELS, ...UPSCALE_MODELS];
}

/**
 * Which ids each door accepts (DESIGN §6): `spec`, only the ids of the spec's price tables;
 * `every`, every id of the catalogue, OpenAI's spellings included, since group A's model list
 * shows them all; `openai`, OpenAI's spellings, chat billed per token. MCP takes group A's body,
 * the dashboard's playground prices group C's, and Anthropic's Messages API bills per token as group B does.
 */
const MODEL_IDS: Record<Door, 'spec' | 'every' | 'openai'> = {
  'group-a': 'every',
  mcp: 'every',
  'group-b': 'openai',
  anthropic: 'openai',
  'group-c': 'spec',
  dashboard: 'spec',
};

/** The model a door accepts under `id` for `kind`, or undefined (an unknown cost). */
export function resolveModel(kind: GenerationKind, id: string | undefined, door: Door): Model | undefined {
  const ids = MODEL_IDS[door];
  switch (kind) {
    case 'image':
      return id === undefined ? undefined : findImageModel(id);
    case 'video':
      if (id === undefined) return undefined;
      return findVideoModel(id) ?? (ids === 'spec' ? undefined : findOpenAiVideoModel(id));
    case 'chat':
      // Per token, `auto` picks a per-token model; the spec's chat is priced per reply.
      if (ids === 'openai') return findOpenAiChatModel(id ?? AUTO_CHAT_ID);
      return (
        findChatModel(id ?? AUTO_CHAT_ID) ?? (ids === 'every' ? findOpenAiChatModel(id ?? AUTO_CHAT_ID) : undefined)
      );
    case 'upscale':
      return findUpscaleModel(id);
  }
}
