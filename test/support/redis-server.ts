// A real redis-server for the rate-limit tests (Debian's package; .ci/run installs it).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { freePort } from '../../runtime/process';
import { start, stopped, waitUntil } from './servers';
import type { Started, TestServer } from './servers';

/** Sends one inline command and says whether the answer starts with `expected`. */
function answers(port: number, command: string, expected: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(1_000);
    let reply = '';
    socket.on('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (d) => {
      reply += d.toString();
      if (reply.includes('\r\n')) socket.end();
    });
    socket.on('close', () => resolve(reply.startsWith(expected)));
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => socket.destroy());
  });
}

function commandOnPath(name: string): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}

export interface RedisServer extends TestServer {
  url: string;
  /** Starts it again on the same port (after `stop`), as an operator restoring Redis would. */
  restart(): Promise<void>;
}

/**
 * A redis-server (Debian's package; .ci/run installs it) without persistence. A missing binary
 * fails the test that needs it, with the command that installs it: these tests never skip.
 */
export async function startRedis(dataDir: string, wantedPort?: number): Promise<RedisServer> {
  const binary = commandOnPath('redis-server');
  if (!binary)
    throw new Error(
      'redis-server is not installed; install it with `apt-get install -y redis-server` (.ci/run does this)',
    );
  await mkdir(dataDir, { recursive: true });
  const port = wantedPort ?? (await freePort());
  let current: Started | undefined;
  const launch = async () => {
    const s = start('redis-server', binary, [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dataDir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
    ]);
    current = s;
    await waitUntil('redis-server', s, () => answers(port, 'PING', '+PONG'));
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    restart: launch,
    async stop() {
      if (current) await stopped(current);
    },
  };
}
