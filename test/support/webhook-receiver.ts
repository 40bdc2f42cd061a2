import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from './harness';

export interface Received {
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent (signatures are over these bytes). */
  body: string;
  json: Record<string, unknown>;
  at: number;
}

/** What the receiver answers the n-th request (0-based): a status (with headers), or 'hang' to never answer. */
export type Behaviour = (
  n: number,
  r: Received,
) => number | { status: number; headers: Record<string, string> } | 'hang';

export interface TestReceiver {
  url: string;
  port: number;
  received: Received[];
  behave(b: Behaviour): void;
  /** Waits until `count` requests matching `filter` arrived. */
  until(count: number, filter?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** A webhook receiver on loopback that records every request and answers as told (200 by default). */
export async function startReceiver(opts: { host?: string; port?: number; path?: string } = {}): Promise<TestReceiver> {
  const received: Received[] = [];
  let behaviour: Behaviour = () => 200;
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(body) as Record<string, unknown>;
      } catch {
        // recorded as is
      }
      const r: Received = { headers: req.headers, body, json, at: Date.now() };
      const answer = behaviour(received.length, r);
      received.push(r);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      const { status, headers } = typeof answer === 'number' ? { status: answer, headers: {} } : answer;
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(`answer ${status}`);
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${opts.path ?? '/hooks'}`,
    port,
    received,
    behave(b) {
      behaviour = b;
    },
    until(count, filter = () => true, timeoutMs = 30_000) {
      return eventually(
        async () => {
          const matching = received.filter(filter);
          return matching.length >= count ? matching : undefined;
        },
        timeoutMs,
        50,
      );
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export const eventOf = (name: string) => (r: Received) => r.json.event === name;

/** The receivers a test file starts as it goes, closed together in its afterAll. */
export function receiverPool() {
  const open: TestReceiver[] = [];
  return {
    start: async (opts?: Parameters<typeof startReceiver>[0]): Promise<TestReceiver> => {
      const r = await startReceiver(opts);
      open.push(r);
      return r;
    },
    closeAll: async (): Promise<void> => {
      await Promise.all(open.map((r) => r.close()));
    },
  };
}
