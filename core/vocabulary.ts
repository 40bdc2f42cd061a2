/**
 * The words every layer shares: what a generation is, where it stands, how it failed and which
 * door it came through. This file imports nothing, so anything may import it and no import
 * circle can pass through it. The dashboard reads the same lists from the API.
 */

export const GENERATION_KINDS = ['image', 'video', 'chat', 'upscale'] as const;
export type GenerationKind = (typeof GENERATION_KINDS)[number];

/** `queued → running → succeeded | failed`; the last two are final. */
export const GENERATION_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type GenerationStatus = (typeof GENERATION_STATUSES)[number];

export const FINAL_STATUSES: ReadonlySet<GenerationStatus> = new Set(['succeeded', 'failed']);
export const isFinal = (status: GenerationStatus): boolean => FINAL_STATUSES.has(status);

/** A failed generation's `error`, as every door shows it. */
export interface GenerationFailure {
  code: string;
  message: string;
  retryable: boolean;
}

/**
 * What a customer reads for a failure code. Always ours: an upstream's own text (its name, its
 * error body, which may carry organisation ids, masked keys or internal paths) goes to the log and
 * to the operator's view of the workflow, never onto the record every door and webhook shows.
 */
const FAILURE_MESSAGES: Readonly<Record<string, string>> = {
  provider_error: 'The model provider failed; nothing was charged. Retry shortly.',
  provider_failed: 'The model provider could not complete this generation; nothing was charged.',
  provider_rejected: 'The model provider refused this generation; nothing was charged.',
  invalid_request: 'The model provider refused the request as invalid; nothing was charged.',
  content_policy: 'The model provider’s safety system refused this generation; nothing was charged.',
  input_missing: 'The input of this generation is no longer stored; nothing was charged.',
  invalid_input: 'The input image could not be used; nothing was charged.',
  output_format: 'The image could not be given in the format asked for; nothing was charged.',
  choice_failed: 'Another choice of the same reply failed, so none was answered; nothing was charged.',
};

export function failureMessage(code: string): string {
  return FAILURE_MESSAGES[code] ?? 'The generation failed; nothing was charged.';
}

/**
 * The doors that take generation requests (to price or to run them), each named as its folder
 * under api/: the spec's groups A (`/api/v1`), B (OpenAI-compatible `/v1`) and C
 * (`/api/generate`), Anthropic's Messages API, the MCP server and the dashboard's playground.
 */
export const DOORS = ['group-a', 'group-b', 'group-c', 'anthropic', 'mcp', 'dashboard'] as const;
export type Door = (typeof DOORS)[number];

/** Kinds whose generations wait for one of the account's slots before they run. */
export const SLOT_KINDS: ReadonlySet<GenerationKind> = new Set(['video']);

/**
 * A chat's tokens as its provider counted them, by OpenAI's rules of inclusion: the input counts
 * its cache reads and cache writes, the output its reasoning (reasoning tokens are output tokens,
 * charged as such). Each door shows them in its own shape; Anthropic's input excludes the cache.
 */
export interface TokenUsage {
  inputTokens: number;
  /** Input read from the provider's prompt cache. */
  cachedInputTokens: number;
  /** Input written to the provider's prompt cache. */
  cacheWriteTokens: number;
  /** What a per-token reply is charged for. */
  outputTokens: number;
  reasoningTokens: number;
}

/** What a finished run produced, as the ledger settles it. */
export interface RunOutput {
  outputKey: string | null;
  outputText: string | null;
  /** Set when the run is billed by use (per token) rather than by its quote. */
  chargeMc?: number | undefined;
  /** Per-token runs: the output tokens `chargeMc` pays for. */
  outputTokens?: number | undefined;
  /** A chat's tokens in detail (cache, reasoning), as its provider counted them. */
  usage?: TokenUsage | undefined;
  /** The configured upstream that produced it (none: the simulator); the workflow shows it as GenerationProvider. */
  upstream?: string | undefined;
  /** A chat that answered by calling the client's functions (an upstream that serves tools). */
  toolCalls?: ToolCall[] | undefined;
  /** The router's record of the calls that made it, written durably with the charge (none: the simulator, or older workers). */
  routes?: RouteEntry[] | undefined;
}

/** One call of the provider router: which upstreams it asked, and which one served at what cost. */
export interface RouteEntry {
  /** The call's own id: however many writers carry the entry, it is merged into the record once. */
  call: string;
  /** The upstreams asked by this call, in order. */
  tried: readonly string[];
  /** The upstream that produced the output, when one did. */
  servedBy?: string | undefined;
  /** What the serving upstream costs us for it, in EUR, when its cost is configured. */
  costEur?: number | undefined;
}

/** One function call a chat model asked the client to make: `arguments` is JSON text, as the model wrote it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** The still previews of a succeeded video, stored beside it (`?variant=` of the video content route). */
export const VIDEO_PREVIEWS = ['thumbnail', 'spritesheet'] as const;
export type VideoPreviewName = (typeof VIDEO_PREVIEWS)[number];

/**
 * A batch (OpenAI's Batch API): `validating` only while its file is read, then `in_progress` (or
 * `failed` at validation, nothing held); `cancelling` while a cancel stops its lines; it ends
 * `completed`, `cancelled`, `expired` (its completion window passed) or `failed`.
 */
export const BATCH_STATUSES = [
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
export const FINAL_BATCH_STATUSES: ReadonlySet<BatchStatus> = new Set(['failed', 'completed', 'expired', 'cancelled']);
export const isFinalBatch = (status: BatchStatus): boolean => FINAL_BATCH_STATUSES.has(status);

/** The endpoints a batch's lines may call, and the kind of generation each line makes. */
export const BATCH_ENDPOINTS = {
  '/v1/chat/completions': 'chat',
  '/v1/responses': 'chat',
  '/v1/images/generations': 'image',
  '/v1/videos': 'video',
  '/v1/video/generations': 'video',
  '/v1/messages': 'chat',
} as const satisfies Record<string, GenerationKind>;
export type BatchEndpoint = keyof typeof BATCH_ENDPOINTS;

/**
 * The two formats a batch is made and read in: OpenAI's Batch API (a JSONL file of requests to one
 * of its endpoints, output and error files) and Anthropic's Message Batches (inline requests to
 * `/v1/messages`, one results file). The endpoint names the format; the engine is the same.
 */
export const BATCH_FORMATS = ['openai', 'anthropic'] as const;
export type BatchFormat = (typeof BATCH_FORMATS)[number];
export const ANTHROPIC_BATCH_ENDPOINT = '/v1/messages' satisfies BatchEndpoint;
export type OpenAiBatchEndpoint = Exclude<BatchEndpoint, typeof ANTHROPIC_BATCH_ENDPOINT>;
export const OPENAI_BATCH_ENDPOINTS = (Object.keys(BATCH_ENDPOINTS) as BatchEndpoint[]).filter(
  (e): e is OpenAiBatchEndpoint => e !== ANTHROPIC_BATCH_ENDPOINT,
) as [OpenAiBatchEndpoint, ...OpenAiBatchEndpoint[]];
export const batchFormatOf = (endpoint: BatchEndpoint): BatchFormat =>
  endpoint === ANTHROPIC_BATCH_ENDPOINT ? 'anthropic' : 'openai';

/** The only completion window there is (OpenAI's): a batch not done within it expires. */
export const BATCH_COMPLETION_WINDOW = '24h';
