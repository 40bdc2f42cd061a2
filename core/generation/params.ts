import type { ToolCall } from '../vocabulary';

/**
 * A generation's parameters come in two types, stored in two columns and never mixed:
 *
 * - `PublicParams`: what the client asked for, as priced and run. Every door may show it (group A's
 *   `params`, MCP, the dashboard); a view is built from it and from nothing else.
 * - `InternalParams`: what the service keeps for itself to run, bill and continue the generation
 *   (deadlines, rates, conversations, tools, response state, stored input keys). No view reads it.
 *
 * test/integration/service/generation/params-privacy.test.ts walks every view a customer gets and fails on any
 * internal key, so a key added to `InternalParams` must stay out of them. This file is one of core/'s
 * leaves (it imports only the vocabulary): the row SQL types its columns with it.
 */

export const RESOLUTIONS = ['480p', '720p', '1080p'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export const UPSCALE_SCALES = [2, 4] as const;
export type UpscaleScale = (typeof UPSCALE_SCALES)[number];

/** What the client asked for and may see, per kind (fields of other kinds are absent). */
export interface PublicParams {
  /** Image: the quality asked (or the model's default). */
  quality?: string;
  /** Image, video: the aspect after snapping to what the model renders. */
  aspect?: string;
  /** Image: the size rendered; video: the size of the preview file; upscale: the output size. */
  width?: number;
  height?: number;
  /** Image: group B's `quality: "hd"`, charged twice where the model has no high variant. */
  hd?: true;
  /** Image: the encoding asked for (OpenAI's `output_format`); PNG when absent. */
  outputFormat?: 'png' | 'jpeg' | 'webp';
  /** Image edit: how many input images it took (the first is the one edited). */
  inputImages?: number;
  /** Image edit: a mask said where to edit (its transparent pixels). */
  masked?: true;
  /** Video: seconds after clamping to the model's range (what is priced and run). */
  seconds?: number;
  resolution?: Resolution;
  /** Video: the succeeded video this one remixes. */
  remixedFrom?: string;
  /** Video: the succeeded video this one continues; `seconds` is what was added (priced), `stitchedSeconds` the whole file's length. */
  extendedFrom?: string;
  stitchedSeconds?: number;
  /** Video: the succeeded video this one is an edited copy of, at its length. */
  editedFrom?: string;
  /** Video (reference frame), upscale: the client's input image, and its size as fetched. */
  imageUrl?: string;
  inputWidth?: number;
  inputHeight?: number;
  /** Upscale: 2 or 4. */
  scale?: UpscaleScale;
  /** Chat: the model id the client sent ('auto' when none). */
  requestedModel?: string;
  /** Chat: the conversation was cut to the model's capacity. */
  promptTruncated?: boolean;
  /** Chat: the output cap (per-token models: what the hold covers). */
  maxTokens?: number;
  /** Chat (per-token models): the output tokens charged, once succeeded. */
  outputTokens?: number;
}

/** Sampling settings passed on to the model as given (OpenAI's names); none changes the price. */
export interface ChatSampling {
  temperature?: number;
  top_p?: number;
  stop?: string[];
  seed?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  /** Each output token's log probability, with the `top_logprobs` likeliest tokens at its place. */
  logprobs?: boolean;
  top_logprobs?: number;
}

/** A turn of a conversation: text, an assistant turn that called functions, or a function's result (`tool`). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: ToolCall[] | undefined;
  /** A tool turn: the call it answers. */
  toolCallId?: string | undefined;
}

/** A function the client offers a chat model (OpenAI's function tool). */
export interface FunctionTool {
  name: string;
  description?: string | undefined;
  /** JSON Schema of the arguments. */
  parameters?: Record<string, unknown> | undefined;
  strict?: boolean | undefined;
}

/** Whether and which function the model must call. */
export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

/**
 * Structured output: the reply is a JSON object (`json_object`), or JSON that validates against a
 * JSON Schema (`json_schema`; `strict` as the client asked). Passed to providers that take it.
 */
export type ResponseFormat =
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      description?: string | undefined;
      strict?: boolean | undefined;
    };

/**
 * What an Anthropic client says about the protocol it speaks: `anthropic-version` and
 * `anthropic-beta` as sent (the beta list comma-separated). An Anthropic upstream receives them
 * as they came, so that a client's beta features reach Anthropic; other upstreams ignore them.
 */
export interface AnthropicHeaders {
  version?: string | undefined;
  beta?: string | undefined;
}

/** The functions of a chat. */
export interface ChatTools {
  functions: FunctionTool[];
  choice?: ToolChoice | undefined;
  parallel?: boolean | undefined;
}

/**
 * What a Responses API request (group B's `POST /v1/responses`) asks to be kept with its chat
 * generation: read back by `GET /v1/responses/{id}` and by a later `previous_response_id`
 * (service/chat/responses.ts). Not priced, not sent to the model.
 */
export interface ResponseRecord {
  /** False: not readable through /v1/responses nor continued; the generation is still the account's record. */
  store: boolean;
  background: boolean;
  instructions?: string | undefined;
  metadata?: Record<string, string> | undefined;
  previousResponseId?: string | undefined;
  /** How many of the conversation's last turns were this request's own input (`GET …/input_items`). */
  inputCount?: number | undefined;
  /** Deleted by `DELETE /v1/responses/{id}`: no longer readable nor continued; the generation stays the account's record. */
  deleted?: boolean | undefined;
}

/** What the service keeps for itself; never shown. */
export interface InternalParams {
  /** The client's own deadline in ms (`Cancel-After`, `deadline_seconds`): the workflow's is the sooner of it and the kind's. */
  clientDeadlineMs?: number;
  /**
   * A chat the API runs and records itself (group B): its hold carries a deadline, and its workflow
   * starts once the reply has ended, with the outcome.
   */
  recordedByApi?: boolean;
  /** Per-token chat: the rate the settle charges, in millicredits per 1,000 output tokens. */
  ratePer1kMc?: number;
  /** Chat: sampling settings passed on to the model. */
  sampling?: ChatSampling;
  /** Chat: the functions the model may call. */
  tools?: ChatTools;
  /** Chat: the conversation as run, when it is more than one user turn. */
  messages?: ChatMessage[];
  /** Chat: the reply must be JSON (and validate against a schema). */
  responseFormat?: ResponseFormat;
  /** Chat made through the Responses API: what it keeps beside the reply. */
  response?: ResponseRecord;
  /** Chat: the function calls the reply made (a response continued later reads them). */
  outputToolCalls?: ToolCall[];
  /** Video (reference frame), upscale: where the checked input image is stored. */
  inputKey?: string;
  /** Video extension or edit: where the source video's file is stored (read when the run starts). */
  sourceVideoKey?: string;
  /** Image edit: where its checked input images are stored, in order, and its mask. */
  inputKeys?: string[];
  maskKey?: string;
  /** One of several generations admitted by one request (group B's `n` images): the first one's id and this one's place. */
  siblings?: { firstId: string; index: number };
  /** The account's share of the task queues, from its plan at admission (core/plans.ts); weight 1 when absent. */
  fairnessWeight?: number;
  /** Chat through the Anthropic door: the client's protocol headers, passed unchanged to an Anthropic upstream. */
  anthropicHeaders?: AnthropicHeaders;
}

/** Every key of each type, so that a test can check them (a key missing here does not compile). */
export const PUBLIC_PARAM_KEYS = Object.keys({
  quality: true,
  aspect: true,
  width: true,
  height: true,
  hd: true,
  outputFormat: true,
  inputImages: true,
  masked: true,
  seconds: true,
  resolution: true,
  remixedFrom: true,
  extendedFrom: true,
  stitchedSeconds: true,
  editedFrom: true,
  imageUrl: true,
  inputWidth: true,
  inputHeight: true,
  scale: true,
  requestedModel: true,
  promptTruncated: true,
  maxTokens: true,
  outputTokens: true,
} satisfies Record<keyof PublicParams, true>) as (keyof PublicParams)[];

export const INTERNAL_PARAM_KEYS = Object.keys({
  clientDeadlineMs: true,
  recordedByApi: true,
  ratePer1kMc: true,
  sampling: true,
  tools: true,
  messages: true,
  responseFormat: true,
  response: true,
  outputToolCalls: true,
  inputKey: true,
  sourceVideoKey: true,
  inputKeys: true,
  maskKey: true,
  siblings: true,
  fairnessWeight: true,
  anthropicHeaders: true,
} satisfies Record<keyof InternalParams, true>) as (keyof InternalParams)[];

/**
 * The public parameters of a stored row, key by key: only what `PublicParams` names is ever shown,
 * whatever else a row may hold (one written by an older process during a rolling deploy).
 */
export function publicParamsOf(stored: PublicParams): PublicParams {
  const shown: Record<string, unknown> = {};
  for (const key of PUBLIC_PARAM_KEYS) if (stored[key] !== undefined) shown[key] = stored[key];
  return shown;
}
