import type { FastifyReply, FastifyRequest } from 'fastify';

/** A comment line every this long keeps proxies and clients from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

/** Streams that are open, so that the app's close ends them instead of waiting for their clients. */
const open = new Set<() => void>();

/** Ends every open event stream (the app is closing; clients reconnect elsewhere). */
export function endEventStreams(): void {
  for (const end of open) end();
}

export interface EventStream {
  send(event: string, data: unknown, id?: string): void;
  end(): void;
  /** Aborted when the stream ends, by either side. */
  signal: AbortSignal;
}

/**
 * Opens a Server-Sent Events response: headers, the client's reconnection delay, keep-alive
 * comments, and an end that is the same whether the client left, the server closed the stream or
 * the app is closing. Any door may stream through it; the events are the door's.
 */
export function openEventStream(
  request: FastifyRequest,
  reply: FastifyReply,
  opts: { retryMs?: number; maxMs?: number } = {},
): EventStream {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    // A stream is the connection's last response: once it ends, nothing keeps the socket (or a
    // closing server) waiting for another request.
    connection: 'close',
  });
  const controller = new AbortController();
  const end = () => {
    if (controller.signal.aborted) return;
    controller.abort();
    clearInterval(keepalive);
    clearTimeout(limit);
    open.delete(end);
    res.end();
  };
  const keepalive = setInterval(() => res.write(': keep-alive\n\n'), KEEPALIVE_MS);
  // A stream ends after a while; EventSource reconnects by itself, resuming after its last event.
  const limit = setTimeout(end, opts.maxMs ?? 10 * 60_000);
  open.add(end);
  res.on('close', end);
  res.write(`retry: ${opts.retryMs ?? 2_000}\n\n`);
  return {
    send(event, data, id) {
      if (!controller.signal.aborted)
        res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end,
    signal: controller.signal,
  };
}

/** Ends when the client closes the connection before the response is done (a reply a door streams or runs for it). */
export function clientGone(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('the client closed the connection'));
  };
  reply.raw.once('close', onClose);
  request.raw.once('close', () => {
    if (request.raw.readableAborted) onClose();
  });
  return controller.signal;
}
