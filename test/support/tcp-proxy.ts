// A TCP proxy in front of a real server, for tests that need the server to go away at an exact
// moment (PostgreSQL stopping between two statements of a request) without stopping the server
// that every other test file shares.
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Drops every connection and refuses new ones until `restore`, as a server that went down. */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let down = false;
  const server = createServer((inbound) => {
    if (down) {
      inbound.destroy();
      return;
    }
    const outbound = connect(target.port, target.host);
    for (const [a, b] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
