import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import { gatheredChat } from './gathered-chat';
import { openAiChatMessages, openAiResponseFormat, openAiTools } from './tool-calls';
import { VIDEO_FEATURES } from './types';
import type {
  ChatStreamEvent,
  Provider,
  ProviderContext,
  ProviderJob,
  ProviderResult,
  ProviderUsage,
  TokenLogprob,
} from './types';
import type { ChatMessage } from '../generation/params';
import {
  callUpstream,
  downloadOutput,
  extensionOf,
  sseData,
  upstreamModel,
  UpstreamUnavailableError,
} from './upstream-http';
import type { ModelMappedEndpoint } from './upstream-http';

/**
 * An OpenAI-compatible upstream (OpenAI itself, OpenRouter, vLLM, LiteLLM…) for chat and images.
 * Chat always streams from the upstream: the API passes the deltas on as they come, and a whole
 * reply (the activity path) is the same stream gathered. Billing uses the upstream's usage when it
 * sends one (`stream_options.include_usage`); otherwise each content delta counts as one token.
 */
export function createOpenAiUpstream(endpoint: ModelMappedEndpoint, http: SafeHttpClient): Provider {
  const streamChat = (job: ProviderJob, signal: AbortSignal) => streamOpenAiChat(endpoint, job, signal);
  return {
    streamChat,
    // Function tools, structured output and log probabilities are passed on as OpenAI's chat
    // completions take them; videos it does not run, so none is extended or edited here.
    serves: (_model, feature) => !VIDEO_FEATURES.includes(feature),
    async run(job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
      if (job.kind === 'chat') return gatheredChat(streamChat(job, ctx.signal), ctx);
      if (job.kind === 'image' && job.inputs?.length) return editImage(endpoint, http, job, job.inputs, ctx.signal);
      if (job.kind === 'image') return generateImage(endpoint, http, job, ctx.signal);
      throw new ProviderRejectedError(
        `The upstream ${endpoint.name} speaks OpenAI's API, which has no ${job.kind} jobs here.`,
        'provider_rejected',
      );
    },
  };
}

/** A chat as the upstream streams it: content deltas (with their log probabilities), tool calls, usage. */
async function* streamOpenAiChat(
  endpoint: ModelMappedEndpoint,
  job: ProviderJob,
  signal: AbortSignal,
): AsyncGenerator<ChatStreamEvent> {
  const messages: ChatMessage[] = job.internal.messages ?? [{ role: 'user', content: job.prompt }];
  const sampling = job.internal.sampling ?? {};
  const tools = job.internal.tools;
  const res = await callUpstream(endpoint, '/chat/completions', {
    signal,
    body: {
      ...sampling,
      ...(tools ? openAiTools(tools) : {}),
      ...(job.internal.responseFormat ? { response_format: openAiResponseFormat(job.internal.responseFormat) } : {}),
      model: upstreamModel(endpoint, job),
      messages: openAiChatMessages(messages),
      stream: true,
      stream_options: { include_usage: true },
      ...(job.params.maxTokens === undefined ? {} : { max_tokens: job.params.maxTokens }),
    },
  });
  for await (const data of sseData(endpoint, res, signal)) {
    if (data === '[DONE]') return;
    let chunk: UpstreamChunk;
    try {
      chunk = JSON.parse(data) as UpstreamChunk;
    } catch {
      throw new UpstreamUnavailableError(`The upstream ${endpoint.name} sent an event that is not JSON.`);
    }
    if (chunk.error)
      throw new UpstreamUnavailableError(
        `The upstream ${endpoint.name} failed mid-stream: ${chunk.error.message ?? 'unknown error'}`,
      );
    const delta = chunk.choices?.[0]?.delta;
    const content = delta?.content;
    const logprobs = chunk.choices?.[0]?.logprobs?.content;
    if (typeof content === 'string' && content !== '')
      yield { type: 'delta', text: content, ...(logprobs ? { logprobs: logprobs.map(tokenLogprobOf) } : {}) };
    for (const call of delta?.tool_calls ?? []) {
      yield {
        type: 'tool_call',
        index: call.index ?? 0,
        id: call.id,
        name: call.function?.name,
        arguments: call.function?.arguments ?? '',
      };
    }
    const usage = chunk.usage ? openAiUsageOf(chunk.usage) : undefined;
    if (usage) yield { type: 'usage', ...usage };
  }
}

/** An edit: OpenAI's multipart /images/edits, one image as `image`, several as `image[]`. */
async function editImage(
  endpoint: ModelMappedEndpoint,
  http: SafeHttpClient,
  job: ProviderJob,
  inputs: NonNullable<ProviderJob['inputs']>,
  signal: AbortSignal,
): Promise<ProviderResult> {
  const form = new FormData();
  const model = upstreamModel(endpoint, job);
  form.append('model', model);
  form.append('prompt', job.prompt);
  form.append('n', '1');
  const blob = (b: Buffer) => new Blob([new Uint8Array(b)], { type: b[0] === 0xff ? 'image/jpeg' : 'image/png' });
  for (const [i, image] of inputs.entries())
    form.append(inputs.length === 1 ? 'image' : 'image[]', blob(image), `image-${i}.png`);
  if (job.mask) form.append('mask', blob(job.mask), 'mask.png');
  // The size asked, where it is not the input's own (which an edit keeps by default).
  const { width, height, inputWidth, inputHeight } = job.params;
  if (width !== undefined && height !== undefined && (width !== inputWidth || height !== inputHeight))
    form.append('size', `${width}x${height}`);
  if (!/(^|\/)gpt-image/.test(model)) form.append('response_format', 'b64_json');
  if (job.params.outputFormat) form.append('output_format', job.params.outputFormat);
  const res = await callUpstream(endpoint, '/images/edits', { signal, form });
  return { file: await imageOf(endpoint, http, res, signal) };
}

/** A new image: OpenAI's /images/generations. */
async function generateImage(
  endpoint: ModelMappedEndpoint,
  http: SafeHttpClient,
  job: ProviderJob,
  signal: AbortSignal,
): Promise<ProviderResult> {
  const res = await callUpstream(endpoint, '/images/generations', {
    signal,
    body: {
      model: upstreamModel(endpoint, job),
      prompt: job.prompt,
      n: 1,
      size: `${job.params.width ?? 1024}x${job.params.height ?? 1024}`,
      // gpt-image models answer base64 by themselves and take no response_format.
      ...(/(^|\/)gpt-image/.test(upstreamModel(endpoint, job)) ? {} : { response_format: 'b64_json' }),
      ...(job.params.outputFormat ? { output_format: job.params.outputFormat } : {}),
    },
  });
  return { file: await imageOf(endpoint, http, res, signal) };
}

/** The image of an images answer: its base64, or the file at its URL. */
async function imageOf(endpoint: ModelMappedEndpoint, http: SafeHttpClient, res: Response, signal: AbortSignal) {
  const body = (await res.json()) as { data?: { b64_json?: string; url?: string }[] };
  const image = body.data?.[0];
  if (image?.b64_json)
    return { data: Buffer.from(image.b64_json, 'base64'), contentType: 'image/png', extension: 'png' };
  if (image?.url) {
    const file = await downloadOutput(endpoint, image.url, http, signal);
    return { ...file, extension: extensionOf(file.contentType, 'png') };
  }
  throw new UpstreamUnavailableError(`The upstream ${endpoint.name} answered without an image.`);
}

interface UpstreamChunk {
  choices?: {
    logprobs?: { content?: UpstreamLogprob[] | null } | null;
    delta?: {
      content?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
  }[];
  usage?: OpenAiUsage | null;
  error?: { message?: string };
}

/**
 * OpenAI's usage, named as chat completions name it or as the Responses API does. Its input counts
 * the cached part and its output the reasoning, as ours do. OpenAI reports no cache writes; servers
 * in front of other models (OpenRouter, LiteLLM) name them `cache_write_tokens` or
 * `cache_creation_input_tokens`.
 */
interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  input_tokens?: number;
  output_tokens?: number;
  prompt_tokens_details?: CacheDetails | null;
  input_tokens_details?: CacheDetails | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  output_tokens_details?: { reasoning_tokens?: number } | null;
}
interface CacheDetails {
  cached_tokens?: number;
  cache_write_tokens?: number;
  cache_creation_input_tokens?: number;
}

export function openAiUsageOf(u: OpenAiUsage): ProviderUsage | undefined {
  const outputTokens = count(u.completion_tokens ?? u.output_tokens);
  if (outputTokens === undefined) return undefined;
  const input = u.prompt_tokens_details ?? u.input_tokens_details;
  const reasoning = u.completion_tokens_details ?? u.output_tokens_details;
  return {
    outputTokens,
    inputTokens: count(u.prompt_tokens ?? u.input_tokens),
    cachedInputTokens: count(input?.cached_tokens),
    cacheWriteTokens: count(input?.cache_write_tokens ?? input?.cache_creation_input_tokens),
    reasoningTokens: count(reasoning?.reasoning_tokens),
  };
}

interface UpstreamLogprob {
  token: string;
  logprob: number;
  bytes?: number[] | null;
  top_logprobs?: { token: string; logprob: number; bytes?: number[] | null }[];
}

const tokenLogprobOf = (l: UpstreamLogprob): TokenLogprob => ({
  token: l.token,
  logprob: l.logprob,
  bytes: l.bytes ?? null,
  top: (l.top_logprobs ?? []).map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes ?? null })),
});

/** A count as an upstream sent it: a whole number of tokens, or nothing. */
const count = (n: unknown): number | undefined =>
  Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : undefined;
