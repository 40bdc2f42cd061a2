import type { InternalParams, PublicParams } from '../generation/params';
import type { GenerationKind, RouteEntry, TokenUsage, ToolCall } from '../vocabulary';

/** One job handed to a provider: the model and the parameters the quote was made with. */
export interface ProviderJob {
  generationId: string;
  kind: GenerationKind;
  model: string;
  prompt: string;
  params: PublicParams;
  /** What the service keeps for the run: the conversation, sampling, tools, rates, the stored input's key. */
  internal: InternalParams;
  /** The input file of a job that transforms one (upscale), read from the store by the activity. */
  input?: Buffer;
  /** An image edit's input images (the first is edited) and its mask (transparent where to edit). */
  inputs?: Buffer[];
  mask?: Buffer;
  /** A video extension's or edit's source video (the file of a succeeded video), read from the store by the activity. */
  sourceVideo?: Buffer;
}

export interface ProviderFile {
  data: Buffer;
  contentType: string;
  extension: string;
}

export interface ProviderResult {
  file?: ProviderFile;
  text?: string;
  /** For use-billed runs (per output token). */
  outputTokens?: number;
  /** A chat's token counts as the provider gave them (cache and reasoning included). */
  usage?: ProviderUsage;
  /** The configured upstream that produced it (none: the simulator). */
  upstream?: string;
  /**
   * Asked to `detach`, an upstream that calls back left its job running there and returned at once:
   * no file yet; the caller waits for the job (UpstreamWait) and runs again with `resume` to collect it.
   */
  waiting?: UpstreamWait;
  /** A chat that answered with calls of the client's functions. */
  toolCalls?: ToolCall[];
  /** The router's entry for this call (served, or left waiting), for the settle to record durably. */
  route?: RouteEntry;
}

/** What a long provider call may use: report liveness, and notice that the job was cancelled. */
export interface ProviderContext {
  /** Reports liveness; `details` are handed back as `resume` to a retried attempt (e.g. an upstream job id). */
  heartbeat(details?: unknown): void;
  signal: AbortSignal;
  /** What the previous attempt of this job last reported with `heartbeat(details)`. */
  resume?: unknown;
  /**
   * The caller can wait for a long upstream job without this call (a video): a provider whose
   * upstream queues jobs submits, then answers `waiting` instead of polling to the end.
   */
  detach?: boolean;
  /**
   * The provider's own progress, 0–100, when it reports one (an upstream's status, the
   * simulator's steps). Call it as often as it changes: the caller decides what to record.
   */
  progress?(percent: number): void;
  /**
   * A still of the output as soon as the provider has one, before the run ends: a video's first
   * frame (an image file sharp reads, e.g. WebP). The caller stores it as the thumbnail.
   */
  preview?(frame: ProviderFile): void;
}

/** One piece of a streamed chat reply, as the provider sends it. */
export type ChatStreamEvent =
  /** Text; with `logprobs` (when the request asked for them) the tokens it is made of. */
  | { type: 'delta'; text: string; logprobs?: TokenLogprob[] | undefined }
  /** A piece of the `index`th function call: its id and name come first, its arguments in pieces. */
  | { type: 'tool_call'; index: number; id?: string | undefined; name?: string | undefined; arguments: string }
  /** The provider's own count of the tokens, when it gives one (at the end). */
  | ({ type: 'usage' } & ProviderUsage);

/**
 * A provider's count of a chat's tokens, by OpenAI's rules of inclusion (TokenUsage): the output
 * always, the rest when the provider says.
 */
export type ProviderUsage = Pick<TokenUsage, 'outputTokens'> & Partial<Omit<TokenUsage, 'outputTokens'>>;

/** An upstream job a run left waiting: where it is, and how to take it up again. */
export interface UpstreamWait {
  /** The configured upstream's name. */
  upstream: string;
  /** The upstream's own id of the job: its webhook names it. */
  jobId: string;
  /** What a later run needs to resume the job (as `ProviderContext.resume`). */
  resume: unknown;
  /** How long a wait holds nothing before the job is checked again, in case its webhook never comes. */
  pollMs: number;
}

/**
 * What only some providers can do with a model: call the client's functions, answer structured
 * output, give log probabilities, continue a finished video, edit one.
 */
export type ProviderFeature = 'tools' | 'json' | 'logprobs' | 'video-extension' | 'video-edit';

/** The features of a video made from another, which a chat upstream never has. */
export const VIDEO_FEATURES: readonly ProviderFeature[] = ['video-extension', 'video-edit'];

/** The most likeliest tokens a place may list, as OpenAI's API allows. */
export const MAX_TOP_LOGPROBS = 20;

/** An output token's log probability, and the likeliest tokens at its place (as many as asked). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** The token's UTF-8 bytes (null where the provider gives none). */
  bytes: number[] | null;
  top: { token: string; logprob: number; bytes: number[] | null }[];
}

export interface Provider {
  run(job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult>;
  /** Whether the provider of `model` can do `feature`; absent means it cannot. */
  serves?(model: string, feature: ProviderFeature): boolean;
  /**
   * A chat reply as it is produced, for the API's streamed path (group B). Ends when the reply is
   * complete; stops (and stops the upstream) when `signal` aborts. Fails before its first event
   * with a ProviderRejectedError (final) or any other error (may pass). `routed` hears the router's
   * entry of the call once it is known (by the time the stream ends or is returned), for the settle.
   */
  streamChat(
    job: ProviderJob,
    signal: AbortSignal,
    routed?: (entry: RouteEntry) => void,
  ): AsyncIterable<ChatStreamEvent>;
  /** Whether a waiting upstream job has ended (either way): one look, no waiting. */
  checkJob?(wait: UpstreamWait, signal: AbortSignal): Promise<boolean>;
  /** Asks the upstream to stop a waiting job (the generation was cancelled or gave up on it). */
  cancelJob?(wait: UpstreamWait): Promise<void>;
}
