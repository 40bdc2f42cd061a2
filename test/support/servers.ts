// What the tests' own servers (redis-server, MinIO) have in common: each runs as a child process
// on a free loopback port with its own data folder, and is stopped by the test that started it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutputTail } from '../../runtime/process';

export interface TestServer {
  port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits until it is gone. */
  stop(): Promise<void>;
}

export interface Started {
  proc: ChildProcess;
  output: OutputTail;
  exited: Promise<void>;
}

export function start(label: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Started {
  const proc = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = new OutputTail(8_000);
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => output.push(chunk));
  // Should the test process die without its afterAll, the server must not outlive it.
  const killOnExit = () => proc.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<void>((resolve) =>
    proc.once('exit', () => {
      process.off('exit', killOnExit);
      resolve();
    }),
  );
  proc.once('error', (err) => output.push(`${label}: ${err.message}`));
  return { proc, output, exited };
}

export async function stopped(s: Started): Promise<void> {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  s.proc.kill('SIGTERM');
  const gone = await Promise.race([s.exited.then(() => true), sleep(5_000).then(() => false)]);
  if (!gone) {
    s.proc.kill('SIGKILL');
    await s.exited;
  }
}

/** Polls `ready` until it is true; fails with the server's output if it exits or takes too long. */
export async function waitUntil(
  label: string,
  s: Started,
  ready: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null)
      throw new Error(`${label} exited before it was ready:\n${s.output.toString()}`);
    if (await ready()) return;
    if (Date.now() > deadline) {
      await stopped(s);
      throw new Error(`${label} was not ready within ${timeoutMs} ms:\n${s.output.toString()}`);
    }
    await sleep(100);
  }
}

/**
 * Starts a server on ports picked free just before: another test's server may take one of them
 * in between, so a start that fails is tried again on new ports (three times in all).
 */
export async function onFreePorts<T>(startOnce: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce();
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}
