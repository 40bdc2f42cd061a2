import { execFile } from 'node:child_process';
import { chown, readFile, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isAlive, processInfo, signal, waitForExit } from './process';

// The data directory of the embedded PostgreSQL (embedded-postgres.ts) and the user it runs as:
// a stale lock cleared, a directory handed to the postgres user when this process is root, and
// errors that say what to change.

const execFileAsync = promisify(execFile);

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

export interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

export const SYSTEM_USER = 'postgres';

/**
 * A run that was killed leaves postmaster.pid behind. PostgreSQL ignores it when the recorded
 * pid is dead, but refuses to start when that pid has been reused by an unrelated process
 * (common in containers), so we remove it ourselves. A live postgres on this directory whose
 * owner died (SIGKILL of the service) is an orphan that nothing else can stop: shut it down.
 * One that still has a live node parent belongs to another running instance: refuse.
 */
export async function clearStaleLock(dataDir: string, log: (message: string) => void): Promise<void> {
  const pid = await postmasterPid(dataDir);
  if (pid === undefined) return;
  const lockFile = join(dataDir, 'postmaster.pid');
  const alive = isAlive(pid);
  const info = alive ? await processInfo(pid) : undefined;
  // Without /proc (not Linux) a live pid cannot be told apart: leave the decision to PostgreSQL.
  if (alive && !info) return;
  if (!info || info.zombie || info.comm !== 'postgres' || !info.args.includes(dataDir)) {
    log(`removing stale ${lockFile} (pid ${pid} is not a postgres running on this directory)\n`);
    await rm(lockFile, { force: true });
    return;
  }
  const parent = await processInfo(info.ppid);
  const orphaned = info.ppid === 1 || !parent || !parent.comm.includes('node');
  if (!orphaned) {
    throw new EmbeddedPostgresError(
      `PostgreSQL is already running on ${dataDir} (pid ${pid}${parent ? `, started by pid ${info.ppid} ${parent.comm}` : ''}). ` +
        'Another instance of the service is probably using this data directory: stop it, or use another DATA_DIR.',
    );
  }
  log(`stopping orphaned postgres (pid ${pid}) left running on ${dataDir} by a previous run\n`);
  for (const [sig, ms] of [
    ['SIGINT', 5_000],
    ['SIGQUIT', 2_000],
    ['SIGKILL', 2_000],
  ] as const) {
    signal(pid, sig);
    if (await waitForExit(pid, ms)) return;
  }
}

async function postmasterPid(dataDir: string): Promise<number | undefined> {
  try {
    const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function lookupUser(name: string): Promise<RunAs | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', name]).then((r) => Number(r.stdout.trim())),
      execFileAsync('id', ['-g', name]).then((r) => Number(r.stdout.trim())),
    ]);
    return { name, uid, gid };
  } catch {
    return undefined;
  }
}

/** As root: hand a fresh data directory to the postgres user and check that it can reach it. */
export async function prepareForUser(dataDir: string, runAs: RunAs): Promise<void> {
  const info = await stat(dataDir);
  if (info.uid !== runAs.uid) {
    if ((await readdir(dataDir)).length > 0) {
      throw new EmbeddedPostgresError(
        `${dataDir} belongs to uid ${info.uid}, but PostgreSQL runs as user ${runAs.name} (uid ${runAs.uid}) because this process is root. ` +
          `Give it the directory (chown -R ${runAs.name}: ${dataDir}) or run as a non-root user.`,
      );
    }
    await chown(dataDir, runAs.uid, runAs.gid);
  }
  // Spawned exactly like embedded-postgres spawns postgres (same uid/gid, no extra groups).
  const probe = 'test -x "$0" && test -w "$0" && test -r "$0"';
  try {
    await execFileAsync('/bin/sh', ['-c', probe, dataDir], { uid: runAs.uid, gid: runAs.gid });
  } catch {
    throw new EmbeddedPostgresError(`PostgreSQL cannot use ${dataDir}.${rootHint(runAs)}`);
  }
}

export function rootHint(runAs: RunAs | undefined): string {
  if (!runAs) return '';
  return (
    ` (This process runs as root, so PostgreSQL runs as user ${runAs.name}, uid ${runAs.uid}: ` +
    'the data directory must belong to it and every parent directory must be searchable by it, ' +
    'e.g. not below /root or a mode-0700 temporary directory.)'
  );
}

export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
