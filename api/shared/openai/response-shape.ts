import { DomainError } from '../../../core/errors';
import { toolCallAssembler } from '../../../core/providers/tool-calls';
import type { ChatTools, ResponseFormat, ResponseRecord } from '../../../core/generation/params';
import type { TokenUsage, ToolCall } from '../../../core/vocabulary';
import { callItemId, messageItemId } from '../../../service/chat/responses';
import type { StoredResponse } from '../../../service/chat/responses';
import type { ChatRunEvent } from '../../../service/chat/reply-stream';
import { unixSeconds } from './words';

/**
 * OpenAI's Response object and its typed Server-Sent Events, as the official SDK's stream
 * accumulator (openai/lib/responses/ResponseStream) checks them: lifecycle events carry the whole
 * response, output events name their item, output and content index, and every event has a
 * sequence number. A response's output is the assistant's message, then any function calls.
 */

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export interface ResponseParts {
  id: string;
  createdAt: Date;
  model: string;
  status: ResponseStatus;
  record: ResponseRecord;
  maxOutputTokens: number | null;
  /** As run: the model's defaults (1) when the request gave none. */
  temperature: number;
  topP: number;
  /** The reply so far; null while there is none. */
  text: string | null;
  /** The functions the model called (only with tools, on an upstream that serves them). */
  toolCalls: ToolCall[];
  /** The functions the request offered, answered back. */
  tools: ChatTools | null;
  /** Structured output asked for (`text.format`), answered back; null for plain text. */
  format: ResponseFormat | null;
  usage: TokenUsage | null;
  error: { code: string; message: string } | null;
  completedAt: Date | null;
}

/** The id of a response's message item: the generation's own, so the two are easy to tell apart and to match. */
export const messageIdOf = messageItemId;

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

function messageOf(p: ResponseParts, status: ItemStatus) {
  return {
    id: messageIdOf(p.id),
    type: 'message' as const,
    status,
    role: 'assistant' as const,
    content: [{ type: 'output_text' as const, text: p.text ?? '', annotations: [], logprobs: [] }],
  };
}

/** A function call item; its id is derived from the response's, its call_id is the model's. */
function functionCallOf(responseId: string, index: number, call: ToolCall, status: ItemStatus) {
  return {
    id: callItemId(responseId, index),
    type: 'function_call' as const,
    status,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
  };
}

/** The output items: the message (left out when the model only called functions), then the calls. */
function outputOf(p: ResponseParts, status: ItemStatus) {
  if (p.text === null) return [];
  const calls = p.toolCalls.map((c, i) => functionCallOf(p.id, i, c, status));
  return p.text === '' && calls.length > 0 ? calls : [messageOf(p, status), ...calls];
}

function toolChoiceOf(tools: ChatTools | null) {
  const choice = tools?.choice ?? (tools ? 'auto' : 'none');
  return typeof choice === 'string' ? choice : { type: 'function' as const, name: choice.name };
}

/** `text.format` as the Responses API spells it. */
export function formatOf(format: ResponseFormat | null) {
  if (!format) return { type: 'text' as const };
  if (format.type === 'json_object') return { type: 'json_object' as const };
  return {
    type: 'json_schema' as const,
    name: format.name,
    schema: format.schema,
    ...(format.description === undefined ? {} : { description: format.description }),
    strict: format.strict ?? null,
  };
}

export function responseObject(p: ResponseParts) {
  const itemStatus = p.status === 'completed' ? 'completed' : p.status === 'in_progress' ? 'in_progress' : 'incomplete';
  return {
    id: p.id,
    object: 'response' as const,
    created_at: unixSeconds(p.createdAt),
    status: p.status,
    background: p.record.background,
    completed_at: p.status === 'completed' && p.completedAt ? unixSeconds(p.completedAt) : null,
    error: p.error,
    incomplete_details: p.status === 'incomplete' ? { reason: 'max_output_tokens' as const } : null,
    instructions: p.record.instructions ?? null,
    max_output_tokens: p.maxOutputTokens,
    metadata: p.record.metadata ?? {},
    model: p.model,
    output: outputOf(p, itemStatus),
    output_text: p.text ?? '',
    parallel_tool_calls: p.tools?.parallel ?? p.tools !== null,
    previous_response_id: p.record.previousResponseId ?? null,
    store: p.record.store,
    temperature: p.temperature,
    top_p: p.topP,
    presence_penalty: 0,
    frequency_penalty: 0,
    top_logprobs: 0,
    reasoning: null,
    max_tool_calls: null,
    service_tier: 'default' as const,
    safety_identifier: null,
    prompt_cache_key: null,
    text: { format: formatOf(p.format) },
    tool_choice: toolChoiceOf(p.tools),
    tools: (p.tools?.functions ?? []).map((f) => ({
      type: 'function' as const,
      name: f.name,
      description: f.description ?? null,
      parameters: f.parameters ?? null,
      strict: f.strict ?? null,
    })),
    truncation: 'disabled' as const,
    // Null until the response has ended, as OpenAI's API sends it and Open Responses requires.
    usage: p.usage ? responseUsageOf(p.usage) : null,
  };
}

/** A stored generation as a response: queued, in progress, completed (incomplete at the cap), failed or cancelled. */
export function partsOfView(g: StoredResponse): ResponseParts {
  const maxTokens = g.params.maxTokens;
  const tokens = g.params.outputTokens ?? 0;
  const sampling = g.sampling;
  const cancelled = g.status === 'failed' && g.error?.code === 'cancelled';
  const status: ResponseStatus =
    g.status === 'queued'
      ? 'queued'
      : g.status === 'running'
        ? 'in_progress'
        : g.status === 'succeeded'
          ? maxTokens !== undefined && tokens >= maxTokens
            ? 'incomplete'
            : 'completed'
          : cancelled
            ? 'cancelled'
            : 'failed';
  return {
    id: g.id,
    createdAt: g.createdAt,
    model: g.model,
    status,
    record: g.record,
    maxOutputTokens: maxTokens ?? null,
    temperature: sampling.temperature ?? 1,
    topP: sampling.top_p ?? 1,
    text: g.status === 'succeeded' ? (g.text ?? '') : null,
    toolCalls: g.status === 'succeeded' ? g.toolCalls : [],
    tools: g.tools ?? null,
    format: g.responseFormat ?? null,
    usage: g.usage,
    error:
      status === 'failed'
        ? { code: 'server_error', message: g.error?.message ?? 'The response failed; nothing was charged.' }
        : null,
    completedAt: g.finishedAt,
  };
}

/**
 * A run as the Responses stream: created, in progress; the message item and its text part added
 * at the first text, a delta per token; a function call item added at its first piece, its
 * arguments as deltas; then every item done in the order it was added and `response.completed`
 * (or `response.incomplete` at max_output_tokens) with the usage. A failure after the first token
 * sends `response.failed` (nothing is charged) and then an `error` event, which the SDK raises as
 * an APIError, as it does for chat completions.
 */
export async function* responseEvents(
  first: IteratorResult<ChatRunEvent>,
  rest: AsyncIterator<ChatRunEvent>,
  start: ResponseParts,
): AsyncGenerator<string> {
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: sequence++ })}\n\n`;
  let parts: ResponseParts = { ...start, status: 'in_progress', text: null, toolCalls: [] };
  let text = '';
  const calls = toolCallAssembler();
  /** The output items in the order they were added: the message, or a function call by its index. */
  const items: ('message' | number)[] = [];
  const textPart = (t: string) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
  const messageAt = () => ({
    item_id: messageIdOf(start.id),
    output_index: items.indexOf('message'),
    content_index: 0,
  });
  const callOf = (index: number, status: ItemStatus) => functionCallOf(start.id, index, calls.at(index), status);
  const itemOf = (item: 'message' | number, status: ItemStatus) =>
    item === 'message' ? messageOf(parts, status) : callOf(item, status);
  function* openMessage(): Generator<string> {
    items.push('message');
    yield event('response.output_item.added', {
      output_index: items.length - 1,
      item: { ...messageOf(parts, 'in_progress'), content: [] },
    });
    yield event('response.content_part.added', { ...messageAt(), part: textPart('') });
  }
  try {
    yield event('response.created', { response: responseObject(parts) });
    yield event('response.in_progress', { response: responseObject(parts) });
    let end: Extract<ChatRunEvent, { type: 'end' }> | undefined;
    for (let r = first; !r.done; r = await rest.next()) {
      const e = r.value;
      if (e.type === 'delta') {
        if (!items.includes('message')) yield* openMessage();
        text += e.text;
        yield event('response.output_text.delta', { ...messageAt(), delta: e.text, logprobs: [] });
      } else if (e.type === 'tool_call') {
        calls.add(e);
        if (!items.includes(e.index)) {
          items.push(e.index);
          yield event('response.output_item.added', {
            output_index: items.length - 1,
            item: { ...callOf(e.index, 'in_progress'), arguments: '' },
          });
        }
        if (e.arguments !== '') {
          yield event('response.function_call_arguments.delta', {
            item_id: callOf(e.index, 'in_progress').id,
            output_index: items.indexOf(e.index),
            delta: e.arguments,
          });
        }
      } else {
        end = e;
      }
    }
    // A run only ends without its end event when the client went away: nobody is listening.
    if (!end) return;
    // An empty reply is still a message.
    if (items.length === 0) yield* openMessage();
    const status = end.finishReason === 'length' ? 'incomplete' : 'completed';
    parts = { ...parts, status, text, toolCalls: calls.calls(), usage: end.usage, completedAt: new Date() };
    for (const [output_index, item] of items.entries()) {
      if (item === 'message') {
        yield event('response.output_text.done', { ...messageAt(), text, logprobs: [] });
        yield event('response.content_part.done', { ...messageAt(), part: textPart(text) });
      } else {
        const call = callOf(item, status);
        yield event('response.function_call_arguments.done', {
          item_id: call.id,
          output_index,
          name: call.name,
          arguments: call.arguments,
        });
      }
      yield event('response.output_item.done', { output_index, item: itemOf(item, status) });
    }
    yield event(`response.${status}`, {
      response: { ...responseObject(parts), output: items.map((item) => itemOf(item, status)) },
    });
  } catch (err) {
    // Headers are gone: the failure travels as events. The run was released, nothing charged.
    const e = err instanceof DomainError ? err : undefined;
    const message = e?.message ?? 'Internal error; retry shortly.';
    yield event('response.failed', {
      response: responseObject({ ...parts, status: 'failed', text, error: { code: 'server_error', message } }),
    });
    yield event('error', { code: e?.type ?? 'server_error', message, param: null });
  } finally {
    await rest.return?.();
  }
}

/** The Responses API's usage: the input counts the cached part, the output the reasoning, as ours do. */
export function responseUsageOf(u: TokenUsage) {
  return {
    input_tokens: u.inputTokens,
    input_tokens_details: { cached_tokens: u.cachedInputTokens, cache_write_tokens: u.cacheWriteTokens },
    output_tokens: u.outputTokens,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: u.inputTokens + u.outputTokens,
  };
}
