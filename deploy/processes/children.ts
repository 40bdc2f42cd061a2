// The service's own entry points run as child processes of a harness (the bench's worker, the
// fault run's API and worker), and the detached safety net that stops them if the harness itself
// is killed. Shared by bench/ and faults/.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import type { Socket } from 'node:net';
import { isAlive, OutputTail, signal, waitForExit } from '../../runtime/process';

const REAPER = 'deploy/processes/reaper.mjs';

/** `temporal` is a process group, `postgres` stops with SIGINT; any other name is one process (`api-2`, `haproxy`…). */
export type ReaperTarget = 'temporal' | 'postgres' | 'worker' | 'api' | 'reference' | 'litellm' | (string & {});

export interface Reaper {
  /** Names a child as it starts (again: a restarted one replaces the one before). */
  tell(name: ReaperTarget, pid: number): void;
  /** Ends the reaper, unless something it watches is still alive: then it stays to finish the job after we exit. */
  dismiss(): void;
}

/**
 * Starts deploy/processes/reaper.mjs, detached: it outlives a harness killed with SIGKILL (which runs no exit
 * hook) and then stops whatever the harness had started, and removes `dataDir` unless `keepData`.
 */
export function startReaper(dataDir: string, keepData: boolean): Reaper {
  const reaper = spawn(process.execPath, [REAPER, String(process.pid), dataDir, keepData ? '1' : '0'], {
    cwd: process.cwd(),
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  reaper.unref();
  const stdin = reaper.stdin as Socket | null;
  stdin?.on('error', () => undefined);
  stdin?.unref();
  const watched = new Map<ReaperTarget, number>();
  return {
    tell: (name, pid) => {
      watched.set(name, name === 'temporal' ? -pid : pid);
      stdin?.write(`${name} ${pid}\n`);
    },
    dismiss: () => {
      if ([...watched.values()].some((pid) => isAlive(pid))) return;
      if (reaper.pid !== undefined && reaper.exitCode === null) signal(reaper.pid, 'SIGTERM');
    },
  };
}

export interface EntryProcess {
  pid: number;
  /** Resolves once the process is gone, with how it ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  hasExited(): boolean;
  /** The last lines it printed. */
  output(): string;
  /** SIGTERM (its own orderly stop), SIGKILL past `graceMs`; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once; resolves once it is gone. */
  kill(): Promise<void>;
}

export class EntryStartError extends Error {
  override name = 'EntryStartError';
}

/**
 * Runs one of the service's entry points (`runtime/worker-process.ts`, `runtime/api-process.ts`)
 * with exactly `env`, and resolves once it prints `readyText`. No npx or tsx CLI in between, so
 * our signals reach it and its pid is the service's own. `detached` puts it in its own process
 * group, so that a Ctrl-C meant for the harness reaches it only through the harness's own stop.
 * If it exits, or is not ready within `readyTimeoutMs`, the start fails with what it printed.
 */
export async function startEntryProcess(options: {
  entry: string;
  /** Another program than `node --import tsx <entry>` (then `entry` only names it): `[file, ...args]`. */
  command?: [string, ...string[]];
  env: NodeJS.ProcessEnv;
  readyText: string;
  readyTimeoutMs?: number;
  /** Its output is appended here too. */
  logFile?: string;
  detached?: boolean;
  /** Told the pid as soon as it is spawned, before it is ready, so a safety net knows it at once. */
  onSpawn?: (pid: number) => void;
}): Promise<EntryProcess> {
  const [file, ...args] = options.command ?? [process.execPath, '--import', 'tsx', options.entry];
  const child = spawn(file, args, {
    cwd: process.cwd(),
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const tail = new OutputTail();
  const log = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
  log?.on('error', () => undefined);
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, sig) => {
      done = true;
      resolve({ code, signal: sig });
    }),
  );
  void exited.then(() => setTimeout(() => log?.end(), 500).unref());
  const ready = new Promise<void>((resolve, reject) => {
    const seen = (chunk: string) => {
      tail.push(chunk);
      if (log && !log.writableEnded) log.write(chunk);
      if (tail.toString().includes(options.readyText)) resolve();
    };
    child.stdout.setEncoding('utf8').on('data', seen);
    child.stderr.setEncoding('utf8').on('data', seen);
    void exited.then((how) =>
      reject(
        new EntryStartError(
          `${options.entry} exited during start-up (${how.signal ?? `code ${how.code}`}):\n${tail.toString()}`,
        ),
      ),
    );
  });
  // A harness that exits without stopping it (an uncaught error, a second Ctrl-C) takes it down too.
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  void exited.then(() => process.removeListener('exit', killOnExit));

  const stop = async (graceMs = 15_000): Promise<void> => {
    if (child.pid === undefined || done) return;
    signal(child.pid, graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
    if (graceMs > 0 && !(await waitForExit(child.pid, graceMs))) signal(child.pid, 'SIGKILL');
    await exited;
  };
  if (child.pid === undefined) throw new EntryStartError(`could not start ${options.entry}`);
  options.onSpawn?.(child.pid);
  const timeoutMs = options.readyTimeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new EntryStartError(`${options.entry} was not ready after ${timeoutMs / 1000} s:\n${tail.toString()}`),
            ),
          timeoutMs,
        );
      }),
    ]);
  } catch (err) {
    await stop(5_000);
    throw err;
  } finally {
    clearTimeout(timer);
  }
  return { pid: child.pid, exited, hasExited: () => done, output: () => tail.toString(), stop, kill: () => stop(0) };
}
