// What the fault run and the cluster share about a stack of service processes: its settings, and
// a handle whose parts can be stopped, killed and started again (faults/stack.ts runs one on the
// dev server, deploy/cluster/stack.ts the production topology).

export interface StackSettings {
  dataDir: string;
  /** Extra environment of the API and the worker (the reconciler's pace). */
  serviceEnv: Record<string, string>;
  log: (line: string) => void;
  /** Told of every start of a service process that ended before it was ready (a supervisor restarts it). */
  onStartFailure: (what: string, error: string) => void;
  /** Told when a running service process ended without being asked to (it is started again). */
  onUnexpectedExit: (what: string, how: string) => void;
}

export type Service = 'api' | 'worker';

export interface ProcessStack {
  /** What runs Temporal, for the timeline. */
  temporalKind: 'Temporal dev server' | 'Temporal server';
  baseUrl: string;
  adminToken: string;
  databaseUrl: string;
  dataDir: string;
  /** The service processes' pids as they are now (a restart replaces them). */
  pids(): Record<Service, number>;
  /** SIGKILLs the worker; `startWorker` brings a new one. */
  killWorker(): Promise<number>;
  /** Starts a new worker and resolves once it polls. */
  startWorker(): Promise<number>;
  /** Fast shutdown of PostgreSQL; `startPostgres` starts it again on the same data and port. */
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** Stops the Temporal dev server; `startTemporal` starts it again on the same SQLite file and port. */
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  stop(): Promise<void>;
}
