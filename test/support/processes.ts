import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

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
  const waits = [...children].map((c) => new Promise((r) => { c.once('exit', r); c.kill('SIGKILL'); }));
  await Promise.all(waits);
}
