// What the fault run and the cluster share about a stack of service processes: its settings, and
// a handle whose parts can be stopped, killed and started again (faults/stack.ts runs one on the
// dev server, deploy/cluster/stack.ts the production topology).
import { randomBytes } from 'node:crypto';

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

/** This run's values of what every service process is told. */
export interface ServiceRun {
  baseUrl: string;
  dataDir: string;
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
  adminToken: string;
}

/**
 * What docker-compose gives the api and worker services, with this run's values and the stack's
 * own (`extra`, which wins); nothing else is inherited, so a DATABASE_URL or S3_BUCKET of the
 * caller's shell cannot leak in.
 */
export function serviceEnvironment(run: ServiceRun, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...(process.env.PATH ? { PATH: process.env.PATH } : {}),
    ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
    // Development mode lets the API fetch upscale inputs from the run's loopback server.
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: run.baseUrl,
    DATA_DIR: run.dataDir,
    DATABASE_URL: run.databaseUrl,
    TEMPORAL_ADDRESS: run.temporalAddress,
    TEMPORAL_TASK_QUEUE: run.taskQueue,
    ADMIN_TOKEN: run.adminToken,
    URL_SIGNING_SECRET: randomBytes(24).toString('base64url'),
    WEBHOOK_SECRET_KEY: randomBytes(24).toString('base64url'),
    LOG_LEVEL: 'warn',
    ...extra,
  };
}
