// The Temporal server's configuration as the production topology runs it: its YAML (persistence
// and visibility on PostgreSQL), the schema tool's steps and the UI server's configuration. The
// cluster (deploy/cluster/stack.ts) and the compose files (deploy/compose-configs.ts) are both
// made from these, so they cannot drift.

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
  /**
   * Fixed for the life of the database. 4 is what the server's own sample configs use, right for
   * one host; a cluster sized for 1,000 generations a second wants 512 or more over several hosts
   * (docs/capacity.md), and on two shared cores 512 cost the floor's workflow 1.6× the server's CPU.
   */
  historyShards = 4,
): Record<string, unknown> {
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${pg.host}:${pg.port}`,
      connectProtocol: 'tcp',
      user: pg.user,
      password: pg.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: network.bindOnIP, ...extra },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: historyShards,
      datastores: {
        'postgres-default': store(TEMPORAL_DATABASES.default, 20),
        'postgres-visibility': store(TEMPORAL_DATABASES.visibility, 5),
      },
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
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `${network.broadcastAddress}:${ports.frontend}`,
        },
      },
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
  const connection = [
    '--plugin',
    'postgres12',
    '--ep',
    pg.host,
    '-p',
    String(pg.port),
    '-u',
    pg.user,
    '--pw',
    pg.password,
    '--db',
    database,
  ];
  return [
    [...connection, 'setup-schema', '-v', '0.0'],
    [...connection, 'update-schema', '--schema-name', `postgresql/v12/${schemaName}`],
  ];
}

/** The UI server's configuration (`<root>/config/<env>.yaml`), pointed at an external frontend. */
export function temporalUiConfig(frontendAddress: string, port: number, host = '127.0.0.1'): Record<string, unknown> {
  return {
    temporalGrpcAddress: frontendAddress,
    host,
    port,
    enableUi: true,
    defaultNamespace: 'default',
    publicPath: '',
    cors: { allowOrigins: [] },
  };
}

/** The ports the compose `temporal` service listens on (the server's defaults). */
export const TEMPORAL_DEFAULT_PORTS: TemporalServerPorts = {
  frontend: 7233,
  frontendHttp: 7243,
  history: 7234,
  matching: 7235,
  worker: 7239,
  membership: [6933, 6934, 6935, 6939],
};
