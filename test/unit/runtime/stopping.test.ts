// The parts of a clean stop that need no running service: the bounded, ordered shutdown and its
// signal handling (runtime/lifecycle.ts), and the DATA_DIR lock that lets a start clean up after
// an instance that was killed (runtime/instance-lock.ts). test/integration/runtime/clean-stops.test.ts
// runs the real thing.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireInstanceLock, InstanceLockedError, LOCK_FILE } from '../../../runtime/instance-lock';
import { createShutdown } from '../../../runtime/lifecycle';
import { isAlive, processInfo, waitForExit } from '../../../runtime/process';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const tempDirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-stopping-'));
  tempDirs.push(dir);
  return dir;
}
const sleepers: number[] = [];
/** A process that does nothing for a minute, in its own process group like our servers. */
function sleeper(): number {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  child.unref();
  sleepers.push(child.pid!);
  return child.pid!;
}

afterAll(async () => {
  for (const pid of sleepers) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe('createShutdown', () => {
  it('stops last first, goes on past a step that hangs or fails, and says which', async () => {
    const lines: string[] = [];
    const order: string[] = [];
    const shutdown = createShutdown({ log: (line) => lines.push(line) });
    shutdown.add('database', async () => void order.push('database'));
    shutdown.add('worker', () => new Promise(() => order.push('worker')), { timeoutMs: 200 });
    shutdown.add('api', async () => {
      order.push('api');
      throw new Error('socket gone');
    });
    // The worker's stop never settles: waiting for it would hang stop() for good, and the test's
    // own timeout would fail it.
    await expect(shutdown.stop()).resolves.toBe(false);
    expect(order).toEqual(['api', 'worker', 'database']);
    expect(lines).toEqual([
      'stopping api failed: socket gone',
      'worker did not stop within 0.2 s; going on without it',
    ]);
    // Once: a second call is the same stop.
    await shutdown.stop();
    expect(order).toHaveLength(3);
  });

  it('halt kills what has a kill, at once', async () => {
    const killed: string[] = [];
    const shutdown = createShutdown({ log: () => undefined });
    shutdown.add('PostgreSQL', () => new Promise(() => undefined), {
      kill: async () => void killed.push('PostgreSQL'),
    });
    shutdown.add('API', () => new Promise(() => undefined));
    await shutdown.halt();
    expect(killed).toEqual(['PostgreSQL']);
  });

  it('takes a signal repeated at once (npm passing it on) as one; a later one stops at once', async () => {
    const dir = await tempDir();
    const script = join(dir, 'child.ts');
    await writeFile(
      script,
      `import { createShutdown } from ${JSON.stringify(join(ROOT, 'runtime/lifecycle.ts'))};
       const shutdown = createShutdown({ log: (line) => console.log(line), repeatWindowMs: 1000 });
       shutdown.add('slow', () => new Promise(() => undefined), { timeoutMs: 60000, kill: async () => console.log('killed slow') });
       shutdown.onSignals((code) => process.exit(code));
       setInterval(() => undefined, 1000);
       console.log('ready');`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 100 && !out.includes('ready'); i++) await sleep(100);
    child.kill('SIGTERM');
    // Apart enough not to merge into one pending signal, close enough to be npm's copy.
    await sleep(200);
    child.kill('SIGTERM');
    await sleep(300);
    expect(out).not.toContain('stopping at once');
    await sleep(700);
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(out.split('\n').filter(Boolean)).toEqual([
      'ready',
      'SIGTERM: stopping (press Ctrl-C again to stop at once)…',
      'SIGINT again: stopping at once',
      'killed slow',
    ]);
  });
});

describe('acquireInstanceLock', () => {
  it('refuses a DATA_DIR whose owner runs, and is free again once released', async () => {
    const dir = await tempDir();
    const lock = await acquireInstanceLock(dir, () => undefined);
    await expect(acquireInstanceLock(dir, () => undefined)).rejects.toThrow(InstanceLockedError);
    await expect(acquireInstanceLock(dir, () => undefined)).rejects.toThrow(
      /Another instance of the service \(pid \d+\) is using/,
    );
    await lock.release();
    const again = await acquireInstanceLock(dir, () => undefined);
    await again.release();
  });

  it('stops the servers a killed owner left running, and nothing that merely reuses a recorded pid', async () => {
    const dir = await tempDir();
    const orphan = sleeper();
    const grouped = sleeper();
    const bystander = sleeper();
    const startTime = async (pid: number) => (await processInfo(pid))!.startTime;
    // The owner: a process that has exited since.
    const owner = spawn('true');
    await new Promise((resolve) => owner.once('exit', resolve));
    await writeFile(
      join(dir, LOCK_FILE),
      JSON.stringify({
        owner: { pid: owner.pid, startTime: 1 },
        servers: [
          {
            name: 'PostgreSQL',
            pid: orphan,
            startTime: await startTime(orphan),
            group: false,
            stopSignals: [
              ['SIGINT', 1000],
              ['SIGKILL', 1000],
            ],
          },
          {
            name: 'Temporal dev server',
            pid: grouped,
            startTime: await startTime(grouped),
            group: true,
            stopSignals: [
              ['SIGTERM', 1000],
              ['SIGKILL', 1000],
            ],
          },
          // Same pid, another start time: since reused by an unrelated process.
          {
            name: 'stale',
            pid: bystander,
            startTime: (await startTime(bystander)) - 1,
            group: false,
            stopSignals: [['SIGKILL', 1000]],
          },
        ],
      }),
    );
    const lines: string[] = [];
    const lock = await acquireInstanceLock(dir, (line) => lines.push(line));
    expect(await waitForExit(orphan, 2_000)).toBe(true);
    expect(await waitForExit(grouped, 2_000)).toBe(true);
    expect(isAlive(bystander)).toBe(true);
    expect(lines.sort()).toEqual([
      `stopping PostgreSQL (pid ${orphan}), left running by an instance that was killed`,
      `stopping Temporal dev server (pid ${grouped}), left running by an instance that was killed`,
    ]);
    const contents = JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8')) as {
      owner: { pid: number };
      servers: unknown[];
    };
    expect(contents).toMatchObject({ owner: { pid: process.pid }, servers: [] });
    await lock.recordServer({ name: 'PostgreSQL', pid: bystander, group: false, stopSignals: [['SIGINT', 1000]] });
    expect(JSON.parse(await readFile(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({
      servers: [{ name: 'PostgreSQL', pid: bystander, startTime: await startTime(bystander) }],
    });
    await lock.release();
  });
});
