// A real Jaeger (v2: the OpenTelemetry Collector with Jaeger's storage and query API), built by
// `npm run jaeger` (.ci/run runs it): OTLP/HTTP in, in-memory storage, its query HTTP API out,
// every port a free loopback one.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedJaegerPath, findJaeger, jaegerConfig, JAEGER_VERSION } from '../../scripts/jaeger';
import { freePort } from '../../runtime/process';
import { onFreePorts, start, stopped, waitUntil } from './servers';
import type { TestServer } from './servers';

export interface JaegerServer extends TestServer {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to (OTLP/HTTP). */
  otlpEndpoint: string;
  /** The query API (`/api/traces/{id}`, `/api/traces?service=`). */
  queryUrl: string;
}

export async function startJaeger(): Promise<JaegerServer> {
  const binary = await findJaeger();
  if (!binary) {
    throw new Error(
      `Jaeger ${JAEGER_VERSION} is not built; run \`npm run jaeger\` (go install into ${cachedJaegerPath()}, once; .ci/run does this) or set JAEGER_BINARY`,
    );
  }
  return onFreePorts(() => startJaegerOnce(binary));
}

async function startJaegerOnce(binary: string): Promise<JaegerServer> {
  const ports = { host: '127.0.0.1', otlp: await freePort(), query: await freePort(), queryGrpc: await freePort() };
  const dir = await mkdtemp(join(tmpdir(), 'gensvc-jaeger-'));
  const file = join(dir, 'config.yaml');
  // JSON is YAML.
  await writeFile(file, JSON.stringify(jaegerConfig(ports, 10_000)));
  const s = start('jaeger', binary, ['--config', file], process.env);
  const queryUrl = `http://127.0.0.1:${ports.query}`;
  const otlpEndpoint = `http://127.0.0.1:${ports.otlp}`;
  try {
    await waitUntil(
      'jaeger',
      s,
      async () => {
        const [query, otlp] = await Promise.all([
          fetch(`${queryUrl}/api/services`).catch(() => undefined),
          // An empty export is an answer: the receiver listens.
          fetch(`${otlpEndpoint}/v1/traces`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: '{}',
          }).catch(() => undefined),
        ]);
        return query?.status === 200 && otlp?.status === 200;
      },
      60_000,
    );
  } catch (err) {
    await stopped(s);
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
