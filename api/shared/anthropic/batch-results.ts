import { estimatedInputTokens } from '../../../core/providers/token-usage';
import type { BatchService, LineResult } from '../../../service/batches/service';
import { failedRunError } from '../openai/failures';
import { anthropicErrorOf } from './errors';
import { messageObject } from './message';

/**
 * A Message Batch's results as Anthropic's API writes them: JSONL, one
 * `{ custom_id, result }` per request, `result` one of `succeeded` (with the Message its request
 * would have answered), `errored` (with the error body it would have answered), `canceled` or
 * `expired` (its batch stopped before it ran, or while it ran). Read from the lines' records each
 * time, in request order, for the Anthropic door's results and group A's and the dashboard's
 * downloads.
 */

export type MessageBatchResult =
  | { type: 'succeeded'; message: ReturnType<typeof messageObject> }
  | { type: 'errored'; error: ReturnType<typeof anthropicErrorOf> }
  | { type: 'canceled' }
  | { type: 'expired' };

const STOPPED = { cancelled: { type: 'canceled' }, expired: { type: 'expired' } } as const;

export function resultOf(l: LineResult): MessageBatchResult {
  if (l.state === 'failed' && l.stopped) return STOPPED[l.stopped];
  const g = l.generations[0];
  if (!g || g.status !== 'succeeded' || !g.usage)
    return { type: 'errored', error: anthropicErrorOf(failedRunError('reply', g?.error), null) };
  const outputTokens = g.params.outputTokens ?? 0;
  return {
    type: 'succeeded',
    message: messageObject(
      { id: g.id, model: g.model, promptTokens: estimatedInputTokens(g.prompt), requestId: g.id },
      {
        text: g.text ?? '',
        toolCalls: g.toolCalls,
        finishReason:
          g.toolCalls.length > 0 ? 'tool_calls' : outputTokens >= (g.params.maxTokens ?? Infinity) ? 'length' : 'stop',
        usage: g.usage,
      },
      'batch',
    ),
  };
}

/**
 * A finished Message Batch's results as JSONL, page by page: every request (`all`, the Anthropic
 * door's one results file), or those that succeeded (`completed`) or did not (`failed`), which
 * group A and the dashboard offer as the batch's output and error downloads.
 */
export async function* messageBatchResults(
  batches: Pick<BatchService, 'lines'>,
  batch: Parameters<BatchService['lines']>[0],
  which: 'all' | 'completed' | 'failed',
): AsyncGenerator<string> {
  for await (const page of batches.lines(batch, which)) {
    yield page.map((l) => `${JSON.stringify({ custom_id: l.customId, result: resultOf(l) })}\n`).join('');
  }
}
