// The Temporal server as the production topology runs it (v1.32.2 on PostgreSQL persistence and
// SQL visibility, the service's dynamic config), set up in a folder: the schema tool's steps, the
// configuration file, the command that runs it, and the readiness checks. `npm run cluster`
// (deploy/cluster/stack.ts) supervises it; `npm run bench -- --topology=cluster` runs it the same way.
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { freePort, runCommand } from '../../runtime/process';
import { ensureNamespace, registerSearchAttributes } from '../../runtime/temporal-setup';
import { ensureTemporalServer } from '../../scripts/temporal-server';
import type { TemporalServerBinaries } from '../../scripts/temporal-server';
import { schemaSteps, TEMPORAL_DATABASES, temporalServerConfig } from '../temporal/server-config';
import type { PostgresTarget } from '../temporal/server-config';

/** The server's dynamic config: the keys every Temporal server of the service gets (docs/decisions/0019-temporal-dispatch.md). */
export const DYNAMIC_CONFIG_FILE = 'deploy/temporal/dynamicconfig/gensvc.yaml';

export interface TemporalServerSetup {
  binaries: TemporalServerBinaries;
  /** The frontend's gRPC address. */
  address: string;
  /** What runs the server (its configuration is written under `root`). */
  command: [string, ...string[]];
  env: NodeJS.ProcessEnv;
  /** What the server prints as it starts (at log level warn, nothing more); `waitForFrontend` then waits for it to serve. */
  readyText: string;
}

/**
 * Builds (or finds) the server, applies its schemas to `pg`'s two databases (which must exist)
 * and writes its configuration under `root`, on free ports. Run `command`, then `waitForFrontend`
 * and `registerNamespace`.
 */
export async function setUpTemporalServer(o: {
  root: string;
  pg: PostgresTarget;
  log: (line: string) => void;
  /** The server's history shards (default 4); fixed once its database has them. */
  historyShards?: number;
  /** Binaries of another version than the one the script builds (the upgrade rehearsal's first). */
  binaries?: TemporalServerBinaries;
}): Promise<TemporalServerSetup> {
  const binaries =
    o.binaries ?? (await ensureTemporalServer(process.env, (line) => o.log(`[temporal-server build] ${line}`)));
  const low = () => freePortBelow(MEMBERSHIP_PORT_LIMIT);
  const ports = {
    frontend: await freePort(),
    frontendHttp: await freePort(),
    history: await freePort(),
    matching: await freePort(),
    worker: await freePort(),
    membership: [await low(), await low(), await low(), await low()] as [number, number, number, number],
  };
  o.log('setting up the Temporal schemas with temporal-sql-tool…');
  await applySchemas(binaries.sqlTool, o.pg);
  await mkdir(join(o.root, 'config'), { recursive: true });
  await writeFile(
    join(o.root, 'config', 'cluster.yaml'),
    JSON.stringify(
      temporalServerConfig(o.pg, ports, resolve(DYNAMIC_CONFIG_FILE), undefined, o.historyShards),
      null,
      2,
    ),
  );
  return {
    binaries,
    address: `127.0.0.1:${ports.frontend}`,
    command: serverCommand(binaries.server, o.root),
    env: { PATH: process.env.PATH ?? '' },
    readyText: 'Loading config files',
  };
}

/** What runs `server` on the configuration `setUpTemporalServer` wrote under `root`. */
export const serverCommand = (server: string, root: string): [string, ...string[]] => [
  server,
  ...['--root', root, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start'],
];

/**
 * Both databases' schemas brought to the newest version `sqlTool` embeds (an upgrade's schema step
 * too: run with the new version's tool while no server of the old one runs).
 */
export async function applySchemas(sqlTool: string, pg: PostgresTarget): Promise<void> {
  const steps = [
    ...schemaSteps(pg, TEMPORAL_DATABASES.default, 'temporal'),
    ...schemaSteps(pg, TEMPORAL_DATABASES.visibility, 'visibility'),
  ];
  for (const args of steps) {
    const { code, output } = await runCommand(sqlTool, args, { PATH: process.env.PATH ?? '' }, () => undefined);
    if (code !== 0)
      throw new Error(`temporal-sql-tool ${args.slice(10).join(' ')} failed (exit code ${code}):\n${output}`);
  }
}

/** Waits until the frontend at `address` answers. */
export async function waitForFrontend(address: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        // GetSystemInfo answers before the frontend serves the rest ("Frontend is not healthy
        // yet"), so a workflow started at that moment failed: wait for a namespace call too.
        await connection.withDeadline(Date.now() + 5_000, () => connection.workflowService.getSystemInfo({}));
        await connection.withDeadline(Date.now() + 5_000, () =>
          connection.workflowService.listNamespaces({ pageSize: 1 }),
        );
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(
          `the Temporal frontend at ${address} did not answer within ${timeoutMs / 1000} s: ${(err as Error).message}`,
        );
      await sleep(500);
    }
  }
}

/** A plain server has no namespace: registers `namespace` and the service's search attributes. */
export async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace });
    await ensureNamespace(client, namespace);
    await registerSearchAttributes(client, namespace);
  } finally {
    await connection.close();
  }
}

/**
 * The server records its members' ringpop ports in a `smallint` column (cluster_membership.rpc_port),
 * so a port the OS picks from the ephemeral range (32768 and up) fails at start-up with
 * `pq: value "44355" is out of range for type smallint`.
 */
const MEMBERSHIP_PORT_LIMIT = 32_768;

async function freePortBelow(limit: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const candidate = 20_000 + Math.floor(Math.random() * (limit - 20_000));
    const free = await new Promise<boolean>((resolvePromise) => {
      const server = createServer();
      server.once('error', () => resolvePromise(false));
      server.listen({ host: '127.0.0.1', port: candidate, exclusive: true }, () =>
        server.close(() => resolvePromise(true)),
      );
    });
    if (free) return candidate;
  }
  throw new Error(`no free port below ${limit}`);
}
