import { toolCallAssembler } from '../../core/providers/tool-calls';
import { uncachedInputTokens } from '../../core/providers/token-usage';
import type { TokenUsage, ToolCall } from '../../core/vocabulary';
import type { ChatRunEvent } from '../../service/chat/reply-stream';
import { anthropicErrorOf } from './errors';

/**
 * A chat run as Anthropic's Message object, or as its stream: `message_start` (with the input's
 * usage), a content block per text or tool call (`content_block_start`, its deltas,
 * `content_block_stop`), `message_delta` with the stop reason and the output tokens charged, then
 * `message_stop`. A failure after the first token is an `error` event (nothing is charged).
 */

type End = Extract<ChatRunEvent, { type: 'end' }>;

/** Every call is the model's own, not a server tool's. */
const DIRECT = { type: 'direct' as const };

export const STOP_REASONS = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' } as const;

export interface MessageMeta {
  id: string;
  model: string;
  /** The input's size as estimated before the run (the end's usage carries the provider's own count). */
  promptTokens: number;
  /** The request's id, which an error event names as Anthropic's do. */
  requestId: string;
}

/** Anthropic's counts: its input_tokens leaves out the input read from or written to the cache, ours counts it. */
function usageOf(usage: TokenUsage) {
  return {
    input_tokens: uncachedInputTokens(usage),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cachedInputTokens,
  };
}

/**
 * What Anthropic's Usage declares beside the token counts: nothing of it is measured here, so each
 * is null (the standard tier is the only one served). The counts, spread after, win on any name.
 */
const UNMEASURED_USAGE = {
  cache_creation: null,
  inference_geo: null,
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: 'standard' as const,
  speed: null,
};
const messageUsageOf = (u: Parameters<typeof usageOf>[0]) => ({ ...UNMEASURED_USAGE, ...usageOf(u) });
/** A message_delta's usage: Anthropic's MessageDeltaUsage, the counts and two of the same nulls. */
const deltaUsageOf = (u: Parameters<typeof usageOf>[0]) => ({
  output_tokens_details: null,
  server_tool_use: null,
  ...usageOf(u),
});

/** The fields of Anthropic's Message about features this service does not run (containers, cache diagnostics, refusals). */
const NO_CONTAINER = { container: null, stop_details: null } as const;
const textBlockOf = (text: string) => ({ type: 'text' as const, text, citations: null });

function toolUseOf(call: ToolCall) {
  let input: unknown = {};
  try {
    input = call.arguments === '' ? {} : JSON.parse(call.arguments);
  } catch {
    // A provider's call cut at max_tokens: its input is what could be read, none.
  }
  return { type: 'tool_use' as const, id: call.id, name: call.name, input, caller: DIRECT };
}

/** The whole message: its text (if any), then its tool calls; an empty reply is one empty text block. */
export function messageObject(
  meta: MessageMeta,
  reply: { text: string; toolCalls: ToolCall[]; finishReason: End['finishReason']; usage: End['usage'] },
) {
  const content = [...(reply.text === '' ? [] : [textBlockOf(reply.text)]), ...reply.toolCalls.map(toolUseOf)];
  return {
    id: meta.id,
    type: 'message' as const,
    role: 'assistant' as const,
    model: meta.model,
    content: content.length > 0 ? content : [textBlockOf('')],
    ...NO_CONTAINER,
    diagnostics: null,
    stop_reason: STOP_REASONS[reply.finishReason],
    stop_sequence: null,
    usage: messageUsageOf(reply.usage),
  };
}

export async function* messageEvents(
  first: IteratorResult<ChatRunEvent>,
  rest: AsyncIterator<ChatRunEvent>,
  meta: MessageMeta,
): AsyncGenerator<string> {
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  /** The content blocks in the order they opened: the text, or a tool call by its index. */
  let open: { kind: 'text' } | { kind: 'tool'; index: number } | undefined;
  let blocks = 0;
  const calls = toolCallAssembler();
  function* close(): Generator<string> {
    if (open) yield event('content_block_stop', { index: blocks - 1 });
    open = undefined;
  }
  try {
    yield event('message_start', {
      message: {
        id: meta.id,
        type: 'message',
        role: 'assistant',
        model: meta.model,
        content: [],
        ...NO_CONTAINER,
        diagnostics: null,
        stop_reason: null,
        stop_sequence: null,
        usage: messageUsageOf({
          inputTokens: meta.promptTokens,
          cachedInputTokens: 0,
          cacheWriteTokens: 0,
          outputTokens: 0,
          reasoningTokens: 0,
        }),
      },
    });
    yield event('ping', {});
    let end: End | undefined;
    for (let r = first; !r.done; r = await rest.next()) {
      const e = r.value;
      if (e.type === 'delta') {
        if (open?.kind !== 'text') {
          yield* close();
          open = { kind: 'text' };
          yield event('content_block_start', { index: blocks++, content_block: textBlockOf('') });
        }
        yield event('content_block_delta', { index: blocks - 1, delta: { type: 'text_delta', text: e.text } });
      } else if (e.type === 'tool_call') {
        calls.add(e);
        if (open?.kind !== 'tool' || open.index !== e.index) {
          yield* close();
          open = { kind: 'tool', index: e.index };
          const call = calls.at(e.index);
          yield event('content_block_start', {
            index: blocks++,
            content_block: { type: 'tool_use', id: call.id, name: call.name, input: {}, caller: DIRECT },
          });
        }
        if (e.arguments !== '')
          yield event('content_block_delta', {
            index: blocks - 1,
            delta: { type: 'input_json_delta', partial_json: e.arguments },
          });
      } else {
        end = e;
      }
    }
    // A run only ends without its end event when the client went away: nobody is listening.
    if (!end) return;
    if (blocks === 0) {
      open = { kind: 'text' };
      yield event('content_block_start', { index: blocks++, content_block: textBlockOf('') });
    }
    yield* close();
    yield event('message_delta', {
      delta: { ...NO_CONTAINER, stop_reason: STOP_REASONS[end.finishReason], stop_sequence: null },
      usage: deltaUsageOf(end.usage),
    });
    yield event('message_stop', {});
  } catch (err) {
    // Headers are gone: the failure travels as Anthropic's error event. Nothing was charged.
    yield event('error', anthropicErrorOf(err, meta.requestId));
  } finally {
    await rest.return?.();
  }
}
