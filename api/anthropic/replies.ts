import { toolCallAssembler } from '../../core/providers/tool-calls';
import type { ChatRunEvent } from '../../service/chat/reply-stream';
import { anthropicErrorOf } from '../shared/anthropic/errors';
import {
  deltaUsageOf,
  DIRECT,
  messageUsageOf,
  NO_CONTAINER,
  STOP_REASONS,
  textBlockOf,
} from '../shared/anthropic/message';
import type { End, MessageMeta } from '../shared/anthropic/message';

/**
 * A chat run as Anthropic's stream: `message_start` (with the input's
 * usage), a content block per text or tool call (`content_block_start`, its deltas,
 * `content_block_stop`), `message_delta` with the stop reason and the output tokens charged, then
 * `message_stop`. A failure after the first token is an `error` event (nothing is charged).
 */

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
