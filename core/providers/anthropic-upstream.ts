import { ProviderRejectedError } from '../errors';
import type { AnthropicHeaders, ChatMessage, ChatTools, ResponseFormat } from '../generation/params';
import { gatheredChat } from './gathered-chat';
import { VIDEO_FEATURES } from './types';
import type { ChatStreamEvent, Provider, ProviderContext, ProviderJob, ProviderResult, ProviderUsage } from './types';
import { callUpstream, sseData, upstreamModel, UpstreamUnavailableError } from './upstream-http';
import type { ModelMappedEndpoint } from './upstream-http';

/**
 * Anthropic's Messages API as an upstream (`protocol: "anthropic"`; base URL as Anthropic's SDK
 * takes it, `https://api.anthropic.com`): `POST {base}/v1/messages` with `x-api-key`, always
 * streamed, so that the API passes text on as it comes and a whole reply in a worker is the same
 * stream gathered. The conversation, function tools and
 * structured output (`output_config.format`) are translated from the service's chat; billing
 * takes the output tokens of Anthropic's `message_delta` usage.
 *
 * A client of the Anthropic door names its `anthropic-version` and `anthropic-beta`; they go to
 * Anthropic unchanged, so that its beta features (Claude Code's among them) reach the model. A
 * request that names none (another door's, or a client without them) is sent as 2023-06-01, whose
 * request shape is the one built here and which every later version still takes.
 */

const DEFAULT_VERSION = '2023-06-01';

/** The protocol headers of one call: the client's own, else the default version alone. */
function anthropicProtocolHeaders(client: AnthropicHeaders | undefined): Record<string, string> {
  const beta = client?.beta;
  return {
    'anthropic-version': client?.version ?? DEFAULT_VERSION,
    ...(beta === undefined ? {} : { 'anthropic-beta': beta }),
  };
}

export function createAnthropicUpstream(endpoint: ModelMappedEndpoint): Provider {
  async function* streamChat(job: ProviderJob, signal: AbortSignal): AsyncGenerator<ChatStreamEvent> {
    if (job.kind !== 'chat')
      throw new ProviderRejectedError(
        `The upstream ${endpoint.name} speaks Anthropic's API: chat only.`,
        'provider_rejected',
      );
    const { system, messages } = anthropicMessages(job.internal.messages ?? [{ role: 'user', content: job.prompt }]);
    const sampling = job.internal.sampling ?? {};
    const res = await callUpstream(endpoint, '/v1/messages', {
      signal,
      headers: anthropicProtocolHeaders(job.internal.anthropicHeaders),
      body: {
        model: upstreamModel(endpoint, job),
        max_tokens: job.params.maxTokens ?? 4096,
        ...(system ? { system } : {}),
        messages,
        ...(sampling.temperature === undefined ? {} : { temperature: Math.min(1, sampling.temperature) }),
        ...(sampling.top_p === undefined ? {} : { top_p: sampling.top_p }),
        ...(sampling.stop?.length ? { stop_sequences: sampling.stop } : {}),
        ...(job.internal.tools ? anthropicTools(job.internal.tools) : {}),
        ...(job.internal.responseFormat
          ? { output_config: { format: anthropicFormat(job.internal.responseFormat) } }
          : {}),
        stream: true,
      },
    });
    /** Anthropic's figures so far: `message_start` has the input's, `message_delta` the output's (and may restate the input's). */
    let counted: AnthropicUsage = {};
    /** Content block index → the tool call's index among this reply's calls. */
    const calls = new Map<number, number>();
    for await (const data of sseData(endpoint, res, signal)) {
      let event: AnthropicEvent;
      try {
        event = JSON.parse(data) as AnthropicEvent;
      } catch {
        throw new UpstreamUnavailableError(`The upstream ${endpoint.name} sent an event that is not JSON.`);
      }
      switch (event.type) {
        case 'message_start': {
          // Its output count is a placeholder: the output billed is message_delta's.
          const { output_tokens: _placeholder, ...input } = withoutNulls(event.message?.usage);
          counted = { ...counted, ...input };
          break;
        }
        case 'content_block_start':
          if (event.content_block?.type === 'tool_use') {
            const index = calls.size;
            calls.set(event.index ?? 0, index);
            yield {
              type: 'tool_call',
              index,
              id: event.content_block.id,
              name: event.content_block.name,
              arguments: '',
            };
          }
          break;
        case 'content_block_delta': {
          const delta = event.delta;
          if (delta?.type === 'text_delta' && delta.text) yield { type: 'delta', text: delta.text };
          else if (delta?.type === 'input_json_delta' && delta.partial_json)
            yield { type: 'tool_call', index: calls.get(event.index ?? 0) ?? 0, arguments: delta.partial_json };
          break;
        }
        case 'message_delta':
          counted = { ...counted, ...withoutNulls(event.usage) };
          break;
        case 'error':
          throw new UpstreamUnavailableError(
            `The upstream ${endpoint.name} failed mid-stream: ${event.error?.type ?? 'error'}: ${event.error?.message ?? ''}`,
          );
        case 'message_stop': {
          const usage = anthropicUsageOf(counted);
          if (usage) yield { type: 'usage', ...usage };
          return;
        }
        default:
          // ping, content_block_stop, and events of later versions: nothing to pass on.
          break;
      }
    }
    const usage = anthropicUsageOf(counted);
    if (usage) yield { type: 'usage', ...usage };
  }

  return {
    streamChat,
    // Function tools and structured output are Anthropic's own features; log probabilities it does not give.
    serves: (_model, feature) => feature !== 'logprobs' && !VIDEO_FEATURES.includes(feature),
    run: (job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> =>
      gatheredChat(streamChat(job, ctx.signal), ctx),
  };
}

interface AnthropicEvent {
  type: string;
  index?: number;
  message?: { usage?: NullableUsage };
  content_block?: { type: string; id?: string; name?: string };
  delta?: { type?: string; text?: string; partial_json?: string };
  usage?: NullableUsage;
  error?: { type?: string; message?: string };
}

/** Anthropic's usage: its `input_tokens` leaves out what was read from or written to the cache. */
interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** As Anthropic sends it: a count not known yet may be null. */
type NullableUsage = { [K in keyof AnthropicUsage]: AnthropicUsage[K] | null };

function withoutNulls(u: NullableUsage | undefined): AnthropicUsage {
  return Object.fromEntries(Object.entries(u ?? {}).filter(([, v]) => typeof v === 'number'));
}

/** Anthropic's figures by OpenAI's rules of inclusion: the input counts the cache's reads and writes. */
export function anthropicUsageOf(u: AnthropicUsage): ProviderUsage | undefined {
  if (typeof u.output_tokens !== 'number') return undefined;
  const cachedInputTokens = u.cache_read_input_tokens ?? 0;
  const cacheWriteTokens = u.cache_creation_input_tokens ?? 0;
  return {
    outputTokens: u.output_tokens,
    ...(u.input_tokens === undefined
      ? {}
      : { inputTokens: u.input_tokens + cachedInputTokens + cacheWriteTokens, cachedInputTokens, cacheWriteTokens }),
  };
}

type Block =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

/**
 * The chat as Anthropic's turns: system messages become the system prompt; a tool turn is a
 * user turn's tool_result block, an assistant's calls its tool_use blocks; turns of one role in a
 * row are one turn, as Anthropic wants them alternating.
 */
export function anthropicMessages(chat: readonly ChatMessage[]): {
  system: string;
  messages: { role: 'user' | 'assistant'; content: Block[] }[];
} {
  const system: string[] = [];
  const messages: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const add = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const m of chat) {
    if (m.role === 'system') system.push(m.content);
    else if (m.role === 'tool')
      add('user', [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content }]);
    else {
      const text: Block[] = m.content === '' ? [] : [{ type: 'text', text: m.content }];
      const uses: Block[] = (m.toolCalls ?? []).map((c) => ({
        type: 'tool_use',
        id: c.id,
        name: c.name,
        input: parsed(c.arguments),
      }));
      add(m.role, [...text, ...uses]);
    }
  }
  return { system: system.join('\n\n'), messages };
}

function parsed(args: string): unknown {
  try {
    return args === '' ? {} : JSON.parse(args);
  } catch {
    return {};
  }
}

function anthropicTools(tools: ChatTools): Record<string, unknown> {
  const c = tools.choice;
  const noParallel = tools.parallel === false ? { disable_parallel_tool_use: true } : {};
  return {
    tools: tools.functions.map((f) => ({
      name: f.name,
      ...(f.description ? { description: f.description } : {}),
      input_schema: f.parameters ?? { type: 'object', properties: {} },
    })),
    ...(c === undefined
      ? {}
      : {
          tool_choice:
            c === 'none'
              ? { type: 'none' }
              : c === 'auto'
                ? { type: 'auto', ...noParallel }
                : c === 'required'
                  ? { type: 'any', ...noParallel }
                  : { type: 'tool', name: c.name, ...noParallel },
        }),
  };
}

/** Anthropic takes a JSON Schema; a bare JSON object is the schema of any object. */
function anthropicFormat(format: ResponseFormat): Record<string, unknown> {
  return { type: 'json_schema', schema: format.type === 'json_schema' ? format.schema : { type: 'object' } };
}
