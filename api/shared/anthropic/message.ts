import { uncachedInputTokens } from '../../../core/providers/token-usage';
import type { TokenUsage, ToolCall } from '../../../core/vocabulary';
import type { ChatRunEvent } from '../../../service/chat/reply-stream';

/**
 * Anthropic's Message object, and the pieces of it its stream sends (api/anthropic/replies.ts):
 * the Anthropic door answers a message with it, and a Message Batch's succeeded results carry it.
 */

export type End = Extract<ChatRunEvent, { type: 'end' }>;

/** Every call is the model's own, not a server tool's. */
export const DIRECT = { type: 'direct' as const };

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
 * is null. The tier is `standard`, or `batch` for a Message Batch's request. The counts, spread
 * after, win on any name.
 */
const UNMEASURED_USAGE = {
  cache_creation: null,
  inference_geo: null,
  output_tokens_details: null,
  server_tool_use: null,
  speed: null,
};
export type ServiceTier = 'standard' | 'batch';
export const messageUsageOf = (u: Parameters<typeof usageOf>[0], tier: ServiceTier = 'standard') => ({
  ...UNMEASURED_USAGE,
  service_tier: tier,
  ...usageOf(u),
});
/** A message_delta's usage: Anthropic's MessageDeltaUsage, the counts and two of the same nulls. */
export const deltaUsageOf = (u: Parameters<typeof usageOf>[0]) => ({
  output_tokens_details: null,
  server_tool_use: null,
  ...usageOf(u),
});

/** The fields of Anthropic's Message about features this service does not run (containers, cache diagnostics, refusals). */
export const NO_CONTAINER = { container: null, stop_details: null } as const;
export const textBlockOf = (text: string) => ({ type: 'text' as const, text, citations: null });

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
  tier: ServiceTier = 'standard',
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
    usage: messageUsageOf(reply.usage, tier),
  };
}
