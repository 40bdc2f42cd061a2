import { get } from 'node:http';
import type { IncomingMessage } from 'node:http';

/** One Server-Sent Event as a client reads it. */
export interface ReceivedEvent<T = unknown> {
  id?: string;
  event: string;
  data: T;
}

export interface ReadOptions<T> {
  lastEventId?: string;
  /** Stop reading once this says so (the stream is then counted as still open). */
  until?: (events: ReceivedEvent<T>[]) => boolean;
  /** Called with each event as it arrives (a test may act on the stream's progress). */
  onEvent?: (event: ReceivedEvent<T>, events: ReceivedEvent<T>[]) => void | Promise<void>;
  /** Give up (the stream still open) after this long. */
  ms?: number;
}

/**
 * Reads a stream's events until it closes, `until` says stop, or `ms` pass: each stream on a
 * connection of its own (node:http, no agent), destroyed at the end, as a browser's would be.
 * `closed` is true when the server ended the stream.
 */
export async function readEvents<T = unknown>(url: string, key: string, opts: ReadOptions<T> = {}) {
  const headers = {
    authorization: `Bearer ${key}`,
    ...(opts.lastEventId !== undefined ? { 'last-event-id': opts.lastEventId } : {}),
  };
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    get(url, { headers, agent: false }, resolve).on('error', reject),
  );
  const events: ReceivedEvent<T>[] = [];
  let closed = false;
  let text = '';
  let timedOut = false;
  let stopped = false;
  const timer = setTimeout(() => {
    timedOut = true;
    res.destroy();
  }, opts.ms ?? 20_000);
  try {
    for await (const chunk of res) {
      text += (chunk as Buffer).toString('utf8');
      if (res.statusCode !== 200) continue;
      let cut;
      while ((cut = text.indexOf('\n\n')) >= 0) {
        const block = text.slice(0, cut);
        text = text.slice(cut + 2);
        const fields = Object.fromEntries(
          block
            .split('\n')
            .filter((l) => !l.startsWith(':') && l.includes(': '))
            .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
        );
        if (!fields.event) continue;
        const event: ReceivedEvent<T> = {
          ...(fields.id ? { id: fields.id } : {}),
          event: fields.event,
          data: JSON.parse(fields.data ?? 'null') as T,
        };
        events.push(event);
        await opts.onEvent?.(event, events);
      }
      if (opts.until?.(events)) {
        stopped = true;
        break;
      }
    }
    closed = !timedOut && !stopped;
  } catch {
    // Destroyed by the timer: the stream was still open.
  } finally {
    clearTimeout(timer);
    res.destroy();
  }
  return {
    status: res.statusCode,
    type: res.headers['content-type'],
    events,
    closed,
    body: res.statusCode === 200 ? undefined : text,
  };
}
