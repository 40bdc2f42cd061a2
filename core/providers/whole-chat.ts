import { toolCallAssembler } from './tool-calls';
import type { ChatStreamEvent, ProviderContext, ProviderResult } from './types';

/**
 * An upstream's streamed chat reply collected whole, for a run that answers at its end: its text,
 * its function calls, and the tokens it produced (the upstream's count, else one per piece). Each
 * piece that arrives is a sign of life.
 */
export async function collectChat(
  stream: AsyncIterable<ChatStreamEvent>,
  ctx: Pick<ProviderContext, 'heartbeat'>,
): Promise<ProviderResult> {
  let text = '';
  let deltas = 0;
  let usage: number | undefined;
  const calls = toolCallAssembler();
  for await (const event of stream) {
    if (event.type === 'usage') {
      usage = event.outputTokens;
      continue;
    }
    if (event.type === 'delta') text += event.text;
    else calls.add(event);
    deltas++;
    ctx.heartbeat();
  }
  const toolCalls = calls.calls();
  return {
    text,
    outputTokens: usage ?? deltas,
    ...(toolCalls.length ? { toolCalls } : {}),
    file: { data: Buffer.from(text, 'utf8'), contentType: 'text/plain; charset=utf-8', extension: 'txt' },
  };
}
