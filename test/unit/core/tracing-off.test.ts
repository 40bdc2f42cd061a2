// Tracing off (OTEL_EXPORTER_OTLP_ENDPOINT unset, the default) costs nothing: no settings, no SDK
// loaded, no tracer registered, and a traced call is the call itself.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadConfig, tracingOf } from '../../../core/config';

const PROBE = fileURLToPath(new URL('../../fixtures/tracing-off/probe.ts', import.meta.url));

describe('tracing off', () => {
  it('is the default, and an empty OTEL_EXPORTER_OTLP_ENDPOINT means off too', () => {
    expect(tracingOf(loadConfig({}), 'gensvc')).toBeUndefined();
    expect(tracingOf(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), 'gensvc')).toBeUndefined();
  });

  it("is on with an endpoint: spans go to its /v1/traces, under OTEL_SERVICE_NAME or the process's own name", () => {
    expect(tracingOf(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }), 'gensvc-api')).toEqual({
      tracesUrl: 'http://collector:4318/v1/traces',
      serviceName: 'gensvc-api',
    });
    expect(
      tracingOf(
        loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example.com/base', OTEL_SERVICE_NAME: 'api-eu' }),
        'gensvc-api',
      ),
    ).toEqual({ tracesUrl: 'https://otel.example.com/base/v1/traces', serviceName: 'api-eu' });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('loads no OpenTelemetry SDK, exporter or Temporal interceptor, and registers no tracer', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', PROBE], {
      env: { PATH: process.env.PATH ?? '' },
    });
    const probe = JSON.parse(stdout) as { answer: number; loaded: string[]; tracerProvider: string };
    expect(probe.answer).toBe(42);
    // The API facade alone is loaded (other libraries import it too); it stays a no-op.
    expect(probe.loaded).toEqual(['@opentelemetry/api']);
    expect(probe.tracerProvider).toBe('NoopTracerProvider');
  });
});

describe('a process configured without Redis, S3, Stripe or SMTP', () => {
  it('loads none of their clients (each is 12–36 MB of RSS)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', PROBE], {
      env: { PATH: process.env.PATH ?? '' },
    });
    expect((JSON.parse(stdout) as { optional: string[] }).optional).toEqual([]);
  });
});
