// Runs `temporal server start-dev` for the embedded default and for tests. We start it ourselves
// rather than through @temporalio/testing because its readiness wait (5 s) is too short for a
// first start with a new SQLite file on a small machine.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { freePort, isAlive, OutputTail, settlesWithin, signal, waitForExit } from './process';
import { dynamicConfigArgs, TEMPORAL_DYNAMIC_CONFIG } from './temporal-server-config';
import type { TemporalDynamicConfig } from './temporal-server-config';

export type SearchAttributeType = 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList';

export interface TemporalDevServerOptions {
  /** The `temporal` executable (see ensureTemporalCli). */
  cliPath: string;
  /** SQLite file for persistence; without it everything is lost when the server stops. */
  dbFile?: string;
  ip?: string;
  /** Frontend gRPC port; a free one when omitted. */
  port?: number;
  /** Web UI port; a free one when omitted. */
  uiPort?: number;
  /** No Web UI (uiUrl is then undefined). */
  headless?: boolean;
  /** Created at launch if it is not `default` (which always exists). */
  namespace?: string;
  /** Registered at launch; readiness includes seeing them registered. */
  searchAttributes?: Record<string, SearchAttributeType>;
  /** The server's stdout and stderr are appended here (they are kept for errors either way). */
  logFile?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** How long to wait for the frontend to answer; the first start on a new SQLite file is slow. */
  readyTimeoutMs?: number;
  /** Dynamic config values; the service's own (TEMPORAL_DYNAMIC_CONFIG) when omitted. */
  dynamicConfig?: TemporalDynamicConfig;
  env?: NodeJS.ProcessEnv;
  /**
   * Told the server's pid (the leader of its process group) as soon as it is spawned, before it
   * is ready, so that a successor can stop it if this process is killed meanwhile.
   */
  onSpawn?: (pid: number) => void | Promise<void>;
}

export interface TemporalDevServer {
  /** host:port of the frontend, for Connection.connect / NativeConnection.connect. */
  address: string;
  uiUrl: string | undefined;
  /** Leader of the server's own process group. */
  pid: number;
  /** SIGTERM to the process group, SIGKILL after 3 s; resolves once nothing of it is left. */
  stop(): Promise<void>;
  /** SIGKILL to the process group: for a stop that must not wait. SQLite in WAL mode survives it. */
  kill(): Promise<void>;
}

export class TemporalDevServerError extends Error {
  override name = 'TemporalDevServerError';
}

export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const { ip = '127.0.0.1', namespace = 'default', searchAttributes = {}, headless = false } = options;
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const port = options.port ?? (await freePort(ip));
  const uiPort = headless ? undefined : (options.uiPort ?? (await freePort(ip)));
  if (options.dbFile) await mkdir(dirname(options.dbFile), { recursive: true });
  if (options.logFile) await mkdir(dirname(options.logFile), { recursive: true });

  const server = spawnServer(options, startDevArgs({ ...options, ip, port, uiPort, namespace, searchAttributes }));
  const pid = await server.started;
  // Its own process group keeps it out of reach of signals meant for this process, so nothing
  // else stops it if this process ends without stop() (an uncaught error, process.exit()).
  const onExit = () => signal(-pid, 'SIGTERM');
  process.on('exit', onExit);
  const forget = () => void process.removeListener('exit', onExit);
  try {
    await options.onSpawn?.(pid);
  } catch (error) {
    await server.kill().finally(forget);
    throw error;
  }

  const host = ip === '0.0.0.0' ? '127.0.0.1' : ip === '::' ? '::1' : ip;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const address = `${hostPart}:${port}`;
  const ready = waitUntilReady(
    address,
    namespace,
    Object.keys(searchAttributes),
    Date.now() + readyTimeoutMs,
    server.hasExited,
  );
  const failure = await Promise.race([ready, server.exited.then(() => 'exited' as const)]);
  if (failure !== undefined) {
    await server.stop().finally(forget);
    const why =
      failure === 'exited'
        ? `exited early (${server.exitStatus()})`
        : `was not ready after ${readyTimeoutMs} ms: ${failure}`;
    throw new TemporalDevServerError(`temporal server start-dev ${why}\n${await server.output()}`);
  }

  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${hostPart}:${uiPort}`,
    pid,
    stop: () => server.stop().finally(forget),
    kill: () => server.kill().finally(forget),
  };
}

interface StartDevSettings {
  ip: string;
  port: number;
  uiPort: number | undefined;
  namespace: string;
  searchAttributes: Record<string, SearchAttributeType>;
  dbFile?: string;
  logLevel?: string;
  dynamicConfig?: TemporalDynamicConfig;
}

function startDevArgs(settings: StartDevSettings): string[] {
  const args = ['server', 'start-dev', '--ip', settings.ip, '--port', String(settings.port)];
  args.push('--log-level', settings.logLevel ?? 'warn', '--color', 'never');
  if (settings.dbFile) {
    // WAL with normal sync survives a process crash (only a power cut may lose the last commits)
    // and costs about 40 % less CPU per generation than SQLite's defaults (docs/decisions/0019-temporal-dispatch.md).
    args.push(
      '--db-filename',
      settings.dbFile,
      '--sqlite-pragma',
      'journal_mode=wal',
      '--sqlite-pragma',
      'synchronous=normal',
    );
  }
  if (settings.uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(settings.uiPort));
  if (settings.namespace !== 'default') args.push('--namespace', settings.namespace);
  for (const [name, type] of Object.entries(settings.searchAttributes)) {
    args.push('--search-attribute', `${name}=${type}`);
  }
  args.push(...dynamicConfigArgs(settings.dynamicConfig ?? TEMPORAL_DYNAMIC_CONFIG));
  return args;
}

/** Spawns the CLI in its own process group and tracks it until it and its group are gone. */
function spawnServer(options: TemporalDevServerOptions, args: string[]) {
  // Its own process group, so a Ctrl-C meant for the parent does not stop it behind the
  // caller's back (the caller stops things in order), and stop() can take down anything it
  // spawned.
  const child = spawn(options.cliPath, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  });
  const tail = new OutputTail();
  const logStream = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
  for (const stream of [child.stdout, child.stderr]) {
    stream.setEncoding('utf8').on('data', (chunk: string) => {
      tail.push(chunk);
      logStream?.write(chunk);
    });
  }

  let spawnError: Error | undefined;
  let exitedFlag = false;
  // A failed spawn emits `error` and no `exit`; `close` comes once stdout/stderr are drained.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      spawnError = error;
      resolve();
    });
  }).then(() => {
    exitedFlag = true;
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  void closed.then(() => logStream?.end());

  const started = (async () => {
    if (child.pid !== undefined) return child.pid;
    await exited;
    throw new TemporalDevServerError(`could not run ${options.cliPath}: ${spawnError?.message ?? 'unknown error'}`);
  })();

  // It usually exits within a second of SIGTERM; SQLite in WAL mode survives the SIGKILL that
  // follows if it does not.
  const stop = async (graceMs = 3_000): Promise<void> => {
    const pid = child.pid;
    if (pid === undefined) return;
    if (!exitedFlag) {
      if (graceMs > 0) signal(-pid, 'SIGTERM');
      if (graceMs === 0 || !(await settlesWithin(exited, graceMs))) signal(-pid, 'SIGKILL');
      await exited;
    }
    // The leader may be gone while something it started still runs in its group.
    if (isAlive(-pid)) {
      signal(-pid, 'SIGKILL');
      await waitForExit(-pid, 5_000);
    }
  };

  return {
    started,
    exited,
    hasExited: () => exitedFlag,
    exitStatus: () => (child.signalCode ? `signal ${child.signalCode}` : `exit code ${child.exitCode}`),
    /** What it printed; waits briefly for the pipes to drain after an exit. */
    output: async () => {
      await settlesWithin(closed, 1_000);
      return tail.toString();
    },
    stop: () => stop(),
    kill: () => stop(0),
  };
}

/**
 * Resolves undefined once the frontend answers and the namespace and search attributes exist
 * (start-dev registers them after the frontend opens), or a description of the last failure.
 */
async function waitUntilReady(
  address: string,
  namespace: string,
  attributes: string[],
  deadline: number,
  gone: () => boolean,
): Promise<string | undefined> {
  let lastError = 'no attempt made';
  while (Date.now() < deadline && !gone()) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.withDeadline(Date.now() + 5_000, async () => {
          await connection.workflowService.getSystemInfo({});
          await connection.workflowService.describeNamespace({ namespace });
          const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
          const missing = attributes.filter((name) => !customAttributes?.[name]);
          if (missing.length > 0) throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
        });
        return undefined;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    await sleep(250);
  }
  return lastError;
}
