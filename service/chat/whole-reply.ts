import { toolCallAssembler } from '../../core/providers/tool-calls';
import type { TokenLogprob } from '../../core/providers/types';
import type { ToolCall } from '../../core/vocabulary';
import type { ChatRunEvent } from './reply-stream';

/** A chat run's reply gathered whole: its text, the functions it called, and how it ended. */
export interface WholeReply {
  text: string;
  /** The text's tokens with their log probabilities, when the request asked for them. */
  logprobs: TokenLogprob[];
  toolCalls: ToolCall[];
  finishReason: Extract<ChatRunEvent, { type: 'end' }>['finishReason'];
  usage: Extract<ChatRunEvent, { type: 'end' }>['usage'];
}

/**
 * Reads the rest of a run's events (after `first`, which the door has already read) into one
 * reply, answered once the run has settled, so that the balance read next already shows the
 * charge. A failure is thrown once the hold is back. Undefined when the events stop without
 * their end (the client went away): nobody is waiting for the answer, nor for the settle.
 */
export async function wholeReply(
  run: { settled(): Promise<void> },
  first: IteratorResult<ChatRunEvent>,
  rest: AsyncIterator<ChatRunEvent>,
): Promise<WholeReply | undefined> {
  let text = '';
  const logprobs: TokenLogprob[] = [];
  const calls = toolCallAssembler();
  let end: Extract<ChatRunEvent, { type: 'end' }> | undefined;
  try {
    for (let r = first; !r.done; r = await rest.next()) {
      if (r.value.type === 'delta') {
        text += r.value.text;
        logprobs.push(...(r.value.logprobs ?? []));
      } else if (r.value.type === 'tool_call') calls.add(r.value);
      else end = r.value;
    }
  } catch (err) {
    await run.settled();
    throw err;
  }
  if (!end) return undefined;
  await run.settled();
  return { text, logprobs, toolCalls: calls.calls(), finishReason: end.finishReason, usage: end.usage };
}
