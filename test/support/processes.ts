import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { processInfo, signal } from '../../runtime/process';
import type { ProcessInfo } from '../../runtime/process';

export interface Child {
  proc: ChildProcess;
  output(): string;
  /** Resolves with the exit code (or the signal name) once the process is gone. */
  exited: Promise<number | string>;
}

const children = new Set<ChildProcess>();

/** Runs one of the project's TypeScript entry points as a real process (no npx in between, so signals reach it). */
export function spawnEntry(entry: string, env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: process.cwd(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    proc.on('exit', (code, signal) => {
      children.delete(proc);
      resolve(code ?? signal ?? -1);
    }),
  );
  return { proc, output: () => out, exited };
}

/** Kills whatever a test left running, so a failure never leaves processes behind. */
export async function killAll(): Promise<void> {
  const waits = [...children].map(
    (c) =>
      new Promise((r) => {
        c.once('exit', r);
        c.kill('SIGKILL');
      }),
  );
  await Promise.all(waits);
}

// --- `npm start` as a user runs it, and the process tree it grows ---

export interface NpmStart {
  /** The npm process; it leads its own process group, as a job started from a terminal does. */
  pid: number;
  output(): string;
  /** Resolves once npm has exited, with its exit code or the signal that ended it. */
  exited: Promise<number | string>;
  hasExited(): boolean;
}

const npmStarts = new Set<number>();
/**
 * Every process seen in a tree of ours (pid → start time), so that a failed test can still kill
 * them all, and only them: a pid that has been reused since belongs to someone else.
 */
const seen = new Map<number, number>();

/** Runs `npm start` in its own process group (a terminal's job) with the given settings. */
export function npmStart(cwd: string, env: Record<string, string>): NpmStart {
  const proc = spawn('npm', ['start'], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (proc.pid === undefined) throw new Error('could not run npm start');
  const pid = proc.pid;
  npmStarts.add(pid);
  let out = '';
  let done = false;
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | string>((resolve) =>
    proc.once('exit', (code, sig) => {
      done = true;
      resolve(code ?? sig ?? -1);
    }),
  );
  return { pid, output: () => out, exited, hasExited: () => done };
}

export interface TreeProcess {
  pid: number;
  comm: string;
  args: string[];
}

/**
 * `root` and everything below it, found by parent pid in /proc. Processes that left the root's
 * process group (PostgreSQL, the Temporal dev server) are still its children, so they are found.
 */
export async function processTree(root: number): Promise<TreeProcess[]> {
  const all = (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const infos = new Map<number, ProcessInfo>();
  await Promise.all(
    all.map(async (pid) => {
      const info = await processInfo(pid);
      if (info && !info.zombie) infos.set(pid, info);
    }),
  );
  const tree: TreeProcess[] = [];
  const visit = (pid: number) => {
    const info = infos.get(pid);
    if (!info) return;
    tree.push({ pid, comm: info.comm, args: info.args });
    seen.set(pid, info.startTime);
    for (const [child, childInfo] of infos) if (childInfo.ppid === pid) visit(child);
  };
  visit(root);
  return tree;
}

/** Those of `pids` still running (zombies count as gone: they hold nothing). */
export async function stillRunning(pids: number[]): Promise<number[]> {
  const alive = await Promise.all(
    pids.map(async (pid) => {
      const info = await processInfo(pid);
      return info && !info.zombie ? pid : undefined;
    }),
  );
  return alive.filter((pid): pid is number => pid !== undefined);
}

/** Waits until none of `pids` runs; returns those still running after `timeoutMs`. */
export async function untilGone(pids: number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await stillRunning(pids);
    if (left.length === 0 || Date.now() >= deadline) return left;
    await sleep(100);
  }
}

/** SIGKILLs every process any `npm start` of this file grew, with the process groups they lead. */
export async function killNpmStarts(): Promise<void> {
  for (const pid of npmStarts) await processTree(pid);
  const ours: number[] = [];
  for (const [pid, startTime] of seen) {
    const info = await processInfo(pid);
    if (!info || info.startTime !== startTime) continue;
    ours.push(pid);
    if (info.pgid === pid) signal(-pid, 'SIGKILL');
    signal(pid, 'SIGKILL');
  }
  await untilGone(ours, 10_000);
  npmStarts.clear();
  seen.clear();
}
