// One `npm start` per DATA_DIR, and a clean slate after one that was killed.
//
// PostgreSQL and the Temporal dev server run in their own process groups (so that a Ctrl-C does
// not stop them before the worker has finished with them), which also means that a SIGKILL of
// the service leaves them running, holding their ports, postmaster.pid and the Temporal SQLite
// file. Nothing but the next start on the same DATA_DIR can clean that up, and to do so without
// guessing it needs to know which processes were ours: the lock file records them, each by pid
// and start time, because a pid alone may by then belong to an unrelated process.
import { open, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive, processInfo, signal, waitForExit } from './process';

export const LOCK_FILE = 'gensvc.lock';

interface ProcessRecord {
  pid: number;
  /** Clock ticks since boot (Linux); undefined where /proc is not available. */
  startTime: number | undefined;
}

interface ServerRecord extends ProcessRecord {
  name: string;
  /** Signal the whole process group (pid is its leader), not only the process. */
  group: boolean;
  /** Sent in turn, each with the time it gets, until the server is gone. */
  stopSignals: [NodeJS.Signals, number][];
}

interface LockContents {
  owner: ProcessRecord;
  servers: ServerRecord[];
}

export interface InstanceLock {
  readonly file: string;
  /** Records a server this instance started, so that a successor can stop it if we are killed. */
  recordServer(server: {
    name: string;
    pid: number;
    group: boolean;
    stopSignals: [NodeJS.Signals, number][];
  }): Promise<void>;
  /** Removes the lock; the servers it names must be stopped by then. */
  release(): Promise<void>;
}

export class InstanceLockedError extends Error {
  override name = 'InstanceLockedError';
}

/**
 * Takes the lock on `dataDir`. If another live instance holds it, throws InstanceLockedError.
 * If its holder is gone, first stops whatever servers that holder left running.
 */
export async function acquireInstanceLock(dataDir: string, log: (line: string) => void): Promise<InstanceLock> {
  const file = join(dataDir, LOCK_FILE);
  const contents: LockContents = { owner: await recordOf(process.pid), servers: [] };
  const write = () => writeFile(file, `${JSON.stringify(contents, null, 2)}\n`);

  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(file, 'wx');
      try {
        await handle.writeFile(`${JSON.stringify(contents, null, 2)}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw error;
    }
    const previous = await readLock(file);
    if (previous && (await isRunning(previous.owner))) {
      throw new InstanceLockedError(
        `Another instance of the service (pid ${previous.owner.pid}) is using ${dataDir}. Stop it, or use another DATA_DIR. ` +
          `(If no such instance runs, delete ${file}.)`,
      );
    }
    // Independent of each other, and each may take seconds.
    await Promise.all((previous?.servers ?? []).map((server) => stopLeftover(server, log)));
    await rm(file, { force: true });
  }

  return {
    file,
    async recordServer(server) {
      contents.servers.push({ ...server, ...(await recordOf(server.pid)) });
      await write();
    },
    release: () => rm(file, { force: true }),
  };
}

async function recordOf(pid: number): Promise<ProcessRecord> {
  return { pid, startTime: (await processInfo(pid))?.startTime };
}

/** The same process as recorded: alive, not a zombie, and (where known) started at the same time. */
async function isRunning(record: ProcessRecord): Promise<boolean> {
  if (!isAlive(record.pid)) return false;
  const info = await processInfo(record.pid);
  if (!info) return record.startTime === undefined;
  return !info.zombie && info.startTime === record.startTime;
}

async function stopLeftover(server: ServerRecord, log: (line: string) => void): Promise<void> {
  if (!(await isRunning(server))) {
    // The leader is gone; anything it started in its group would be ours too.
    if (server.group && isAlive(-server.pid)) signal(-server.pid, 'SIGKILL');
    return;
  }
  log(`stopping ${server.name} (pid ${server.pid}), left running by an instance that was killed`);
  const target = server.group ? -server.pid : server.pid;
  for (const [sig, ms] of server.stopSignals) {
    signal(target, sig);
    if (await waitForExit(target, ms)) return;
  }
  log(`${server.name} (pid ${server.pid}) is still running after ${server.stopSignals.map(([sig]) => sig).join(', ')}`);
}

async function readLock(file: string): Promise<LockContents | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as LockContents;
  } catch {
    // Unreadable: its writer died between creating and writing it, so nothing it names runs.
    return undefined;
  }
}
