// A real Jaeger (v2: the OpenTelemetry Collector with Jaeger's storage and query API), built by
// `npm run jaeger` (.ci/run runs it): OTLP/HTTP in, in-memory storage, its query HTTP API out,
// every port a free loopback one.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedJaegerPath, findJaeger, JAEGER_VERSION } from '../../scripts/jaeger';
import { freePort } from '../../runtime/process';
import { start, stopped, waitUntil } from './servers';
import type { TestServer } from './servers';

export interface JaegerServer extends TestServer {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to (OTLP/HTTP). */
  otlpEndpoint: string;
  /** The query API (`/api/traces/{id}`, `/api/traces?service=`). */
  queryUrl: string;
}

const config = (p: { otlp: number; query: number; queryGrpc: number }) => `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${p.query}
    grpc:
      endpoint: 127.0.0.1:${p.queryGrpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${p.otlp}
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`;

export async function startJaeger(): Promise<JaegerServer> {
  const binary = await findJaeger();
  if (!binary) {
    throw new Error(`Jaeger ${JAEGER_VERSION} is not built; run \`npm run jaeger\` (go install into ${cachedJaegerPath()}, once; .ci/run does this) or set JAEGER_BINARY`);
  }
  const ports = { otlp: await freePort(), query: await freePort(), queryGrpc: await freePort() };
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-jaeger-'));
  const file = join(dir, 'config.yaml');
  await writeFile(file, config(ports));
  const s = start('jaeger', binary, ['--config', file], process.env);
  const queryUrl = `http://127.0.0.1:${ports.query}`;
  const otlpEndpoint = `http://127.0.0.1:${ports.otlp}`;
  try {
    await waitUntil('jaeger', s, async () => {
      const [query, otlp] = await Promise.all([
        fetch(`${queryUrl}/api/services`).catch(() => undefined),
        // An empty export is an answer: the receiver listens.
        fetch(`${otlpEndpoint}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).catch(() => undefined),
      ]);
      return query?.status === 200 && otlp?.status === 200;
    }, 60_000);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port: ports.query,
    otlpEndpoint,
    queryUrl,
    stop: async () => {
      await stopped(s);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
