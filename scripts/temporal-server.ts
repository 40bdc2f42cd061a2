// The Temporal server as production runs it (not the CLI's dev server): the server binary, its
// schema tool, and the Web UI server, each built from the Go module proxy once into the cache
// folder beside the CLI. `npm run cluster` and `npm run faults -- --topology=cluster` use them.
import { dirname, join, resolve } from 'node:path';
import { goInstallIntoCache } from '../runtime/go-install';
import { isExecutableFile } from '../runtime/process';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';

/**
 * The server the CLI v1.5.1 embeds (`go version -m` of it lists go.temporal.io/server v1.29.1),
 * so the dev server and this one behave alike; its module embeds the PostgreSQL schemas
 * (schema/postgresql/v12) the schema tool applies with --schema-name.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
/** The UI server the same CLI embeds (github.com/temporalio/ui-server/v2 v2.42.1). */
export const TEMPORAL_UI_VERSION = 'v2.42.1';

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  ui: string;
}

const cacheRoot = (env: NodeJS.ProcessEnv) => dirname(dirname(cachedTemporalCliPath({ env })));

async function explicit(env: NodeJS.ProcessEnv, name: string): Promise<string | undefined> {
  const value = env[name];
  if (!value) return undefined;
  const path = resolve(value);
  if (!(await isExecutableFile(path))) throw new Error(`${name} is set to ${value}, which is not an executable file.`);
  return path;
}

/**
 * TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER when set, else the cache
 * folder's, built there first when missing (`go install`, several minutes the first time).
 */
export async function ensureTemporalServer(env: NodeJS.ProcessEnv = process.env, progress: (line: string) => void = () => undefined): Promise<TemporalServerBinaries> {
  const instead = 'TEMPORAL_SERVER_BINARY, TEMPORAL_SQL_TOOL and TEMPORAL_UI_SERVER to existing binaries';
  const [server, sqlTool, ui] = [await explicit(env, 'TEMPORAL_SERVER_BINARY'), await explicit(env, 'TEMPORAL_SQL_TOOL'), await explicit(env, 'TEMPORAL_UI_SERVER')];
  const built = server && sqlTool ? [server, sqlTool] : await goInstallIntoCache({
    what: `the Temporal server ${TEMPORAL_SERVER_VERSION}`,
    packages: [
      { pkg: `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-server' },
      { pkg: `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-sql-tool' },
    ],
    dir: join(cacheRoot(env), `temporal-server-${TEMPORAL_SERVER_VERSION}`),
    env,
    progress,
    instead,
  });
  const [uiBuilt] = ui ? [ui] : await goInstallIntoCache({
    what: `the Temporal UI server ${TEMPORAL_UI_VERSION}`,
    packages: [{ pkg: `github.com/temporalio/ui-server/v2/cmd/server@${TEMPORAL_UI_VERSION}`, binary: 'temporal-ui-server' }],
    dir: join(cacheRoot(env), `temporal-ui-server-${TEMPORAL_UI_VERSION}`),
    env,
    progress,
    instead,
  });
  return { server: server ?? built[0]!, sqlTool: sqlTool ?? built[1]!, ui: uiBuilt! };
}

export interface TemporalServerPorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** Membership (ringpop) ports of frontend, history, matching, worker. */
  membership: [number, number, number, number];
}

export interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password: string;
}

/** The databases the server persists to: its own store, and SQL visibility (search attributes are columns there). */
export const TEMPORAL_DATABASES = { default: 'temporal', visibility: 'temporal_visibility' } as const;

/**
 * The server's configuration (`<root>/config/<env>.yaml`; JSON is YAML), as the server's own
 * config/development-postgres12.yaml has it: PostgreSQL for persistence and for visibility, one
 * process running every service, and the dynamic config file the compose server reads too.
 */
export function temporalServerConfig(
  pg: PostgresTarget,
  ports: TemporalServerPorts,
  dynamicConfigFile: string,
  /** Where the services listen, and the address they tell each other (a container's own IP when binding 0.0.0.0). */
  network: { bindOnIP: string; broadcastAddress: string } = { bindOnIP: '127.0.0.1', broadcastAddress: '127.0.0.1' },
): Record<string, unknown> {
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12', databaseName, connectAddr: `${pg.host}:${pg.port}`, connectProtocol: 'tcp', user: pg.user, password: pg.password, maxConns, maxIdleConns: maxConns, maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({ rpc: { grpcPort, membershipPort, bindOnIP: network.bindOnIP, ...extra } });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      // Fixed for the life of the database; 4 is what the server's own sample configs use.
      numHistoryShards: 4,
      datastores: { 'postgres-default': store(TEMPORAL_DATABASES.default, 20), 'postgres-visibility': store(TEMPORAL_DATABASES.visibility, 5) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: network.broadcastAddress } },
    services: {
      frontend: service(ports.frontend, ports.membership[0], { httpPort: ports.frontendHttp }),
      history: service(ports.history, ports.membership[1]),
      matching: service(ports.matching, ports.membership[2]),
      worker: service(ports.worker, ports.membership[3]),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `${network.broadcastAddress}:${ports.frontend}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * The schema tool's steps for one database (which must exist): the version table, then every
 * versioned step of the schema the tool embeds up to the newest. Re-running them on an up-to-date
 * database changes nothing.
 */
export function schemaSteps(pg: PostgresTarget, database: string, schemaName: 'temporal' | 'visibility'): string[][] {
  const connection = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user, '--pw', pg.password, '--db', database];
  return [
    [...connection, 'setup-schema', '-v', '0.0'],
    [...connection, 'update-schema', '--schema-name', `postgresql/v12/${schemaName}`],
  ];
}

/** The UI server's configuration (`<root>/config/<env>.yaml`), pointed at an external frontend. */
export function temporalUiConfig(frontendAddress: string, port: number, host = '127.0.0.1'): Record<string, unknown> {
  return { temporalGrpcAddress: frontendAddress, host, port, enableUi: true, defaultNamespace: 'default', publicPath: '', cors: { allowOrigins: [] } };
}

/** The ports the compose `temporal` service listens on (the server's defaults). */
export const TEMPORAL_DEFAULT_PORTS: TemporalServerPorts = {
  frontend: 7233, frontendHttp: 7243, history: 7234, matching: 7235, worker: 7239, membership: [6933, 6934, 6935, 6939],
};
