import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Standing } from './standing';

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
  /**
   * Sends an event once the stream's key or session is confirmed to stand; false (and the stream
   * ended with its final event) when it no longer does.
   */
  deliver(event: string, data: unknown, id?: string): Promise<boolean>;
  end(): void;
  /** Aborted when the stream ends, by either side. */
  signal: AbortSignal;
}

export interface StreamOptions {
  retryMs?: number;
  maxMs?: number;
  /** The key or session the stream reads with (api/shared/standing.ts), checked while it is open. */
  standing?: Standing;
  /** The stream's last event once `standing` no longer stands (the door's words for the reason). */
  lastWords?: (reason: string) => { event: string; data: unknown };
}

/**
 * Opens a Server-Sent Events response: headers, the client's reconnection delay, keep-alive
 * comments, and an end that is the same whether the client left, the server closed the stream or
 * the app is closing. With a `standing`, the stream ends with a last event naming the reason as
 * soon as its key or session no longer stands, and sends nothing after. Any door may stream through
 * it; the events are the door's.
 */
export function openEventStream(request: FastifyRequest, reply: FastifyReply, opts: StreamOptions = {}): EventStream {
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
  const { standing } = opts;
  const end = () => {
    if (controller.signal.aborted) return;
    controller.abort();
    clearInterval(keepalive);
    clearTimeout(limit);
    open.delete(end);
    standing?.stop();
    res.end();
  };
  const send = (event: string, data: unknown, id?: string) => {
    if (!controller.signal.aborted)
      res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  /** The last event, then the end: the key or session no longer stands. */
  const lost = (reason: string) => {
    const last = opts.lastWords?.(reason) ?? { event: 'error', data: { message: reason } };
    send(last.event, last.data);
    end();
  };
  const keepalive = setInterval(() => res.write(': keep-alive\n\n'), KEEPALIVE_MS);
  // A stream ends after a while; EventSource reconnects by itself, resuming after its last event.
  const limit = setTimeout(end, opts.maxMs ?? 10 * 60_000);
  open.add(end);
  res.on('close', end);
  if (standing) {
    const onLost = () => lost(String(standing.signal.reason));
    if (standing.signal.aborted) queueMicrotask(onLost);
    else standing.signal.addEventListener('abort', onLost, { once: true });
    controller.signal.addEventListener('abort', () => standing.signal.removeEventListener('abort', onLost));
  }
  res.write(`retry: ${opts.retryMs ?? 2_000}\n\n`);
  return {
    send,
    async deliver(event, data, id) {
      const reason = await standing?.confirm();
      if (reason !== undefined) lost(reason);
      if (controller.signal.aborted) return false;
      send(event, data, id);
      return true;
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
