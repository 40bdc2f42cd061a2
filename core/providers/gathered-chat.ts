import { toolCallAssembler } from './tool-calls';
import type { ChatStreamEvent, ProviderContext, ProviderResult, ProviderUsage } from './types';

/**
 * A streamed chat read whole, as a worker runs it: its text, its function calls, and the
 * provider's usage (each piece one output token when it gives none).
 */
export async function gatheredChat(
  stream: AsyncIterable<ChatStreamEvent>,
  ctx: Pick<ProviderContext, 'heartbeat'>,
): Promise<ProviderResult> {
  let text = '';
  let pieces = 0;
  let usage: ProviderUsage | undefined;
  const calls = toolCallAssembler();
  for await (const event of stream) {
    if (event.type === 'usage') {
      const { type: _type, ...counted } = event;
      usage = counted;
      continue;
    }
    if (event.type === 'delta') text += event.text;
    else calls.add(event);
    pieces++;
    ctx.heartbeat();
  }
  const toolCalls = calls.calls();
  return {
    text,
    outputTokens: usage?.outputTokens ?? pieces,
    ...(usage ? { usage } : {}),
    ...(toolCalls.length ? { toolCalls } : {}),
    file: { data: Buffer.from(text, 'utf8'), contentType: 'text/plain; charset=utf-8', extension: 'txt' },
  };
}
