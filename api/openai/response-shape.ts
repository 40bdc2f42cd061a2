import { DomainError } from '../../core/errors';
import type { GenerationView } from '../../core/generation-view';
import type { ChatRunEvent } from '../../service/chat-runs';
import type { ResponseRecord } from '../../service/requests';
import { unixSeconds } from './shared';

/**
 * OpenAI's Response object and its typed Server-Sent Events, as the official SDK's stream
 * accumulator (openai/lib/responses/ResponseStream) checks them: lifecycle events carry the whole
 * response, output events name their item, output and content index, and every event has a
 * sequence number. A response has at most one output item, the assistant's message.
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
  usage: { promptTokens: number; completionTokens: number } | null;
  error: { code: string; message: string } | null;
  completedAt: Date | null;
}

/** The id of a response's message item: the generation's own, so the two are easy to tell apart and to match. */
export const messageIdOf = (responseId: string): string => `msg_${responseId.replace(/^gen_/, '')}`;

function messageOf(p: ResponseParts, status: 'in_progress' | 'completed' | 'incomplete') {
  return {
    id: messageIdOf(p.id), type: 'message' as const, status, role: 'assistant' as const,
    content: [{ type: 'output_text' as const, text: p.text ?? '', annotations: [], logprobs: [] }],
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
    output: p.text === null ? [] : [messageOf(p, itemStatus)],
    output_text: p.text ?? '',
    parallel_tool_calls: false,
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
    text: { format: { type: 'text' as const } },
    tool_choice: 'none' as const,
    tools: [],
    truncation: 'disabled' as const,
    usage: p.usage && {
      input_tokens: p.usage.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: p.usage.completionTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: p.usage.promptTokens + p.usage.completionTokens,
    },
  };
}

/** A stored generation as a response: queued, in progress, completed (incomplete at the cap), failed or cancelled. */
export function partsOfView(g: GenerationView & { record: ResponseRecord }): ResponseParts {
  const maxTokens = Number(g.params.maxTokens);
  const tokens = Number(g.params.outputTokens ?? 0);
  const sampling = (g.params.sampling ?? {}) as { temperature?: number; top_p?: number };
  const cancelled = g.status === 'failed' && g.error?.code === 'cancelled';
  const status: ResponseStatus =
    g.status === 'queued' ? 'queued'
      : g.status === 'running' ? 'in_progress'
        : g.status === 'succeeded' ? (tokens >= maxTokens ? 'incomplete' : 'completed')
          : cancelled ? 'cancelled' : 'failed';
  return {
    id: g.id, createdAt: g.createdAt, model: g.model, status, record: g.record,
    maxOutputTokens: Number.isFinite(maxTokens) ? maxTokens : null,
    temperature: sampling.temperature ?? 1, topP: sampling.top_p ?? 1,
    text: g.status === 'succeeded' ? (g.text ?? '') : null,
    usage: g.status === 'succeeded' ? { promptTokens: Math.ceil(g.prompt.length / 4), completionTokens: tokens } : null,
    error: status === 'failed' ? { code: 'server_error', message: g.error?.message ?? 'The response failed; nothing was charged.' } : null,
    completedAt: g.finishedAt,
  };
}

/**
 * A run as the Responses stream: created, in progress, the message and its text part added, a
 * delta per token, then the text, part and item done and `response.completed` (or
 * `response.incomplete` at max_output_tokens) with the usage. A failure after the first token
 * sends `response.failed` (nothing is charged) and then an `error` event, which the SDK raises as
 * an APIError, as it does for chat completions.
 */
export async function* responseEvents(
  first: IteratorResult<ChatRunEvent>,
  rest: AsyncIterator<ChatRunEvent>,
  start: ResponseParts,
): AsyncGenerator<string> {
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: sequence++ })}\n\n`;
  const at = { item_id: messageIdOf(start.id), output_index: 0 };
  const part = { ...at, content_index: 0 };
  let parts: ResponseParts = { ...start, status: 'in_progress', text: null };
  let text = '';
  try {
    yield event('response.created', { response: responseObject(parts) });
    yield event('response.in_progress', { response: responseObject(parts) });
    parts = { ...parts, text: '' };
    yield event('response.output_item.added', { output_index: 0, item: { ...messageOf(parts, 'in_progress'), content: [] } });
    yield event('response.content_part.added', { ...part, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } });
    let end: Extract<ChatRunEvent, { type: 'end' }> | undefined;
    for (let r = first; !r.done; r = await rest.next()) {
      if (r.value.type === 'delta') {
        text += r.value.text;
        yield event('response.output_text.delta', { ...part, delta: r.value.text, logprobs: [] });
      } else {
        end = r.value;
      }
    }
    // A run only ends without its end event when the client went away: nobody is listening.
    if (!end) return;
    const status = end.finishReason === 'length' ? 'incomplete' : 'completed';
    parts = { ...parts, status, text, usage: end.usage, completedAt: new Date() };
    yield event('response.output_text.done', { ...part, text, logprobs: [] });
    yield event('response.content_part.done', { ...part, part: { type: 'output_text', text, annotations: [], logprobs: [] } });
    yield event('response.output_item.done', { output_index: 0, item: messageOf(parts, status) });
    yield event(`response.${status}`, { response: responseObject(parts) });
  } catch (err) {
    // Headers are gone: the failure travels as events. The run was released, nothing charged.
    const e = err instanceof DomainError ? err : undefined;
    const message = e?.message ?? 'Internal error; retry shortly.';
    yield event('response.failed', { response: responseObject({ ...parts, status: 'failed', text, error: { code: 'server_error', message } }) });
    yield event('error', { code: e?.type ?? 'server_error', message, param: null });
  } finally {
    await rest.return?.();
  }
}
