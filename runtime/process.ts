// Small helpers for the child processes the embedded runtime starts (Temporal dev server,
// PostgreSQL, the Go build of the Temporal CLI, the bench's Python environment).
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A port that was free a moment ago. The OS picks it; there is a short window in which another
 * process could take it, which is acceptable for a development runtime and tests.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

/** True while `pid` exists. EPERM means it exists but belongs to someone else. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sends `signal` and ignores "no such process": the target may already be gone. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Polls until `pid` is gone; resolves false if it is still there after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
  return true;
}

/** True if `promise` settles within `ms`; the timer does not keep the process alive. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timeout = sleep(ms, false, { ref: false });
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    timeout,
  ]);
}

export interface ProcessInfo {
  /** Executable name as the kernel reports it (truncated to 15 characters). */
  comm: string;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /**
   * When it started, in clock ticks since boot. A pid can be reused by an unrelated process;
   * pid and start time together name one process for good.
   */
  startTime: number;
  /** argv of the process. */
  args: string[];
  /** Exited but not yet reaped by its parent: it holds nothing any more. */
  zombie: boolean;
}

/** Reads /proc (Linux only); undefined when the process is gone or /proc is unavailable. */
export async function processInfo(pid: number): Promise<ProcessInfo | undefined> {
  try {
    const [stat, cmdline] = await Promise.all([
      readFile(`/proc/${pid}/stat`, 'utf8'),
      readFile(`/proc/${pid}/cmdline`, 'utf8'),
    ]);
    // `comm` is in parentheses and may itself contain spaces or parentheses, so split at the
    // last closing one.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    // Fields after the comm, numbered as in proc(5) from field 3 (state) on.
    const fields = stat.slice(close + 2).split(' ');
    return {
      comm,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      startTime: Number(fields[19]),
      args: cmdline.split('\0').filter((arg) => arg !== ''),
      zombie: fields[0] === 'Z',
    };
  } catch {
    return undefined;
  }
}

/** Keeps the last `limit` characters of a stream, for error messages about a failed child. */
export class OutputTail {
  private text = '';

  constructor(private readonly limit = 16_000) {}

  push(chunk: string): void {
    this.text = (this.text + chunk).slice(-this.limit);
  }

  toString(): string {
    return this.text.trim();
  }
}

/** A regular file this process may execute (a built CLI in a cache folder, say). */
export async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs a command, forwarding its output line by line and keeping it all for the error. */
export async function runCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  progress: (line: string) => void,
  cwd?: string,
): Promise<{ code: number | null; output: string }> {
  const output = new OutputTail(200_000);
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
  let pending = '';
  const onData = (chunk: string) => {
    output.push(chunk);
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) progress(line);
  };
  child.stdout.setEncoding('utf8').on('data', onData);
  child.stderr.setEncoding('utf8').on('data', onData);
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      if (pending) progress(pending);
      resolvePromise({ code, output: output.toString() });
    });
  });
}
