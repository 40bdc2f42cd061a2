import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { UnauthorizedError } from '../../core/errors';
import type { Standing } from '../shared/standing';

type JsonRpcId = string | number | null;

/**
 * An MCP answer while its key stands (api/shared/standing.ts). Until the answer begins, a revoked
 * key ends the request with a 401 and the handler's work is dropped; a JSON answer is held until
 * the key is confirmed; a Server-Sent Events answer is confirmed before each message it passes on,
 * and once the key no longer stands it ends with a JSON-RPC error for the request naming why.
 */
export async function whileStanding(standing: Standing, id: JsonRpcId, answer: Promise<Response>): Promise<Response> {
  let onLost: (() => void) | undefined;
  const lost = new Promise<never>((_, reject) => {
    onLost = () => reject(revoked(String(standing.signal.reason)));
    if (standing.signal.aborted) onLost();
    else standing.signal.addEventListener('abort', onLost, { once: true });
  });
  lost.catch(() => undefined);
  let response: Response;
  try {
    response = await Promise.race([answer, lost]);
  } finally {
    standing.signal.removeEventListener('abort', onLost!);
  }
  const streamed = response.headers.get('content-type')?.startsWith('text/event-stream') === true;
  if (!streamed || !response.body) {
    const reason = await standing.confirm();
    if (reason !== undefined) {
      await response.body?.cancel();
      throw revoked(reason);
    }
    return response;
  }
  return new Response(guarded(response.body, standing, id), { status: response.status, headers: response.headers });
}

const revoked = (reason: string) => new UnauthorizedError(reason, 'authentication_error');

/** The messages of an SSE answer, each passed on once the key is confirmed; the last one an error when it is not. */
function guarded(body: ReadableStream<Uint8Array>, standing: Standing, id: JsonRpcId): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const lost = new Promise<{ lost: string }>((resolve) => {
    const onLost = () => resolve({ lost: String(standing.signal.reason) });
    if (standing.signal.aborted) onLost();
    else standing.signal.addEventListener('abort', onLost, { once: true });
  });
  const lastWords = (reason: string) =>
    new TextEncoder().encode(
      `event: message\ndata: ${JSON.stringify({
        jsonrpc: '2.0',
        id,
        error: { code: ErrorCode.ConnectionClosed, message: reason, data: { type: 'authentication_error', code: 401 } },
      })}\n\n`,
    );
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await Promise.race([reader.read(), lost]);
      if ('lost' in next) return end(controller, next.lost);
      if (next.done) return controller.close();
      const reason = await standing.confirm();
      if (reason !== undefined) return end(controller, reason);
      controller.enqueue(next.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });

  function end(controller: ReadableStreamDefaultController<Uint8Array>, reason: string): void {
    controller.enqueue(lastWords(reason));
    controller.close();
    reader.cancel().catch(() => undefined);
  }
}
