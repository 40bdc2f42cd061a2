// Jaeger, the tracing backend the trace test sends spans to and reads them back from (its query
// API). Version 2 is built on the OpenTelemetry Collector: an OTLP receiver, in-memory storage and
// the query API in one binary. Built from source once with `go install` (runtime/go-install.ts).
import { dirname, join } from 'node:path';
import { findBuiltBinary, goInstallIntoCache } from '../runtime/go-install';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';

/**
 * The Go module version of Jaeger v2.13.0's release (Jaeger tags each release twice, and the v2
 * tags are not valid versions of the module github.com/jaegertracing/jaeger). Its go.mod replaces
 * sarama, so it is built inside a main module of our own (GoInstallSpec.replacingModule).
 */
export const JAEGER_VERSION = 'v1.76.0';
/** The same release's own version: the tag of its image (docker-compose.yml). */
export const JAEGER_RELEASE = '2.13.0';
const MODULE = 'github.com/jaegertracing/jaeger';

/** Where a Jaeger listens: OTLP/HTTP in, its query API (HTTP and gRPC) out. */
export interface JaegerPorts {
  host: string;
  otlp: number;
  query: number;
  queryGrpc: number;
}

/** The default OTLP/HTTP and query ports (docker-compose.yml's jaeger). */
export const JAEGER_DEFAULT_PORTS = { otlp: 4318, query: 16686, queryGrpc: 16685 } as const;

/**
 * Jaeger's configuration (an OpenTelemetry Collector's): OTLP/HTTP received, kept in memory, read
 * through the query API; nothing else listens (no metrics or health port), so a test can run it
 * on free ports. The trace test and docker-compose.yml both run this one.
 */
export function jaegerConfig(p: JaegerPorts, maxTraces = 100_000) {
  return {
    service: {
      extensions: ['jaeger_storage', 'jaeger_query'],
      pipelines: { traces: { receivers: ['otlp'], processors: ['batch'], exporters: ['jaeger_storage_exporter'] } },
      telemetry: { metrics: { level: 'none' }, logs: { level: 'warn' } },
    },
    extensions: {
      jaeger_storage: { backends: { memstore: { memory: { max_traces: maxTraces } } } },
      jaeger_query: {
        storage: { traces: 'memstore' },
        http: { endpoint: `${p.host}:${p.query}` },
        grpc: { endpoint: `${p.host}:${p.queryGrpc}` },
      },
    },
    receivers: { otlp: { protocols: { http: { endpoint: `${p.host}:${p.otlp}` } } } },
    processors: { batch: { timeout: '200ms' } },
    exporters: { jaeger_storage_exporter: { trace_storage: 'memstore' } },
  };
}

const cacheDir = (env: NodeJS.ProcessEnv) =>
  join(dirname(dirname(cachedTemporalCliPath({ env }))), `jaeger-${JAEGER_VERSION}`);

/** `<cache>/jaeger-v…/jaeger`, beside the Temporal CLI's and stripe-mock's. */
export function cachedJaegerPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'jaeger');
}

/** JAEGER_BINARY, then the cache folder; undefined when neither has it. */
export function findJaeger(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return findBuiltBinary(env, 'JAEGER_BINARY', cachedJaegerPath(env));
}

/** findJaeger, or else build it into the cache folder (several minutes, once). */
export async function ensureJaeger(
  env: NodeJS.ProcessEnv = process.env,
  progress: (line: string) => void = () => undefined,
): Promise<string> {
  const found = await findJaeger(env);
  if (found) return found;
  const [built] = await goInstallIntoCache({
    what: `Jaeger ${JAEGER_VERSION}`,
    packages: [{ pkg: `${MODULE}/cmd/jaeger`, binary: 'jaeger' }],
    replacingModule: { path: MODULE, version: JAEGER_VERSION },
    dir: cacheDir(env),
    env: { ...env, CGO_ENABLED: '0' },
    progress,
    instead: 'JAEGER_BINARY to a jaeger (v2) binary',
  });
  return built!;
}
