// One trace per generation, checked in a real Jaeger (v2, `npm run jaeger`) through its query API:
// the API process and a worker process (runtime/api-process.ts, runtime/worker-process.ts) export
// their spans with OTLP to it; one video submitted through group A yields one trace holding the
// HTTP span, the workflow start and run, its activities, the ledger's transactions and the provider
// call, and the trace id is in the API's JSON log lines of that request. The webhook delivery it
// causes is a trace of its own, its attempt linked to the settle that wrote the event. Development
// mode, so that webhooks may go to a loopback receiver.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../../runtime/process';
import {
  createProcessGroup,
  http as httpAt,
  minimalEnv,
  waitForHealth,
  waitForWorkers,
} from '../../support/app-processes';
import type { AppProcess } from '../../support/app-processes';
import { createDatabase, databaseUrlFor, dropDatabase, eventually } from '../../support/harness';
import { startJaeger } from '../../support/jaeger-server';
import type { JaegerServer } from '../../support/jaeger-server';
import { startReceiver } from '../../support/webhook-receiver';
import type { TestReceiver } from '../../support/webhook-receiver';

const ADMIN_TOKEN = 'tracing-admin-token-0123456789';
const STARTUP_MS = 90_000; // the worker bundles workflows/ with webpack as it starts

const group = createProcessGroup();
const explained = <T>(work: () => Promise<T>) => group.explained('tracing test', work);
const name = `t_tracing_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const taskQueue = `q-${name}`;
let base: string;
let jaeger: JaegerServer | undefined;
let receiver: TestReceiver | undefined;
let connection: Connection | undefined;
let databaseCreated = false;
/** Every line the API process wrote to stdout (its JSON log), whole. */
const apiLines: string[] = [];

const http = <T>(method: 'GET' | 'POST', path: string, opts: { token?: string; body?: unknown } = {}) =>
  httpAt<T>(base, method, path, opts);

function collectLines(p: AppProcess, into: string[]): void {
  let pending = '';
  p.proc.stdout!.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    into.push(...lines);
  });
}

beforeAll(
  async () => {
    await explained(async () => {
      jaeger = await startJaeger();
      receiver = await startReceiver();
      await createDatabase(name);
      databaseCreated = true;
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      const env: Record<string, string> = {
        ...minimalEnv(),
        NODE_ENV: 'development',
        HOST: '127.0.0.1',
        PORT: String(port),
        DATABASE_URL: databaseUrlFor(name),
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_TASK_QUEUE: taskQueue,
        ADMIN_TOKEN,
        URL_SIGNING_SECRET: 'tracing-url-signing-secret-0123456789',
        WEBHOOK_SECRET_KEY: 'tracing-webhook-key-0123456789',
        PUBLIC_BASE_URL: base,
        DATA_DIR: join(inject('testDataDir'), name),
        LOG_LEVEL: 'info',
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
      };
      const worker = group.start('worker', 'runtime/worker-process.ts', { ...env, WORKER_ROLE: 'all' });
      const api = group.start('api', 'runtime/api-process.ts', env);
      collectLines(api, apiLines);
      await waitForHealth(group, base, STARTUP_MS);
      connection = await Connection.connect({ address: inject('temporalAddress') });
      await waitForWorkers(group, connection, taskQueue, [worker], STARTUP_MS);
    });
  },
  2 * STARTUP_MS + 30_000,
);

afterAll(async () => {
  await group.killAll();
  await connection?.close();
  await jaeger?.stop();
  await receiver?.close();
  if (databaseCreated) await dropDatabase(name);
});

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  processID: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

async function query<T>(path: string): Promise<{ status: number; body: { data: T } }> {
  const res = await fetch(`${jaeger!.queryUrl}${path}`);
  return { status: res.status, body: (await res.json()) as { data: T } };
}

const tagOf = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;

/** The API's JSON log lines of one request (by its x-request-id). */
function logOf(requestId: string | null): Record<string, unknown>[] {
  return apiLines
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    })
    .filter((l) => l.reqId === requestId);
}

/** The trace with this id once it holds spans of every name asked (`a|b`: either), as Jaeger's query API has it. */
function traceHolding(traceId: string, names: string[]): Promise<JaegerTrace> {
  return eventually(
    async () => {
      const res = await query<JaegerTrace[]>(`/api/traces/${traceId}`);
      if (res.status !== 200) return undefined;
      const t = res.body.data[0];
      const have = new Set(t?.spans.map((s) => s.operationName));
      return names.every((e) => e.split('|').some((n) => have.has(n))) ? t : undefined;
    },
    30_000,
    500,
  );
}

describe('tracing with OTEL_EXPORTER_OTLP_ENDPOINT set (a real Jaeger)', () => {
  it('one video submitted through group A is one trace: the HTTP span, the workflow start and run, its activities, the ledger transactions and the provider call; its request log lines carry the trace id; its webhook attempt is traced too, linked to it, and probes are not', async () => {
    await explained(async () => {
      const account = await http<{ id: string }>('POST', '/admin/v1/accounts', {
        token: ADMIN_TOKEN,
        body: { plan: 'samurai', credits: 100, chatCap: 0 },
      });
      expect(account.status).toBe(201);
      const key = await http<{ key: string }>('POST', `/admin/v1/accounts/${account.body.id}/keys`, {
        token: ADMIN_TOKEN,
        body: { scopes: ['video', 'webhooks'] },
      });
      expect(key.status).toBe(201);
      const endpoint = await http<{ id: string }>('POST', '/api/v1/webhooks', {
        token: key.body.key,
        body: { url: `${receiver!.url}/hook`, events: ['generation.completed'] },
      });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);

      const submitted = await http<{ id: string; status: string }>('POST', '/api/v1/generate', {
        token: key.body.key,
        body: { kind: 'video', model: 'kling', prompt: 'sim:delay=300 waves' },
      });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
      const requestId = submitted.headers.get('x-request-id');
      const id = submitted.body.id;
      const done = await eventually(
        async () => {
          const res = await http<{ status: string }>('GET', `/api/v1/generations/${id}`, { token: key.body.key });
          expect(res.status).toBe(200);
          return ['succeeded', 'failed'].includes(res.body.status) ? res.body : undefined;
        },
        60_000,
        200,
      );
      expect(done.status).toBe('succeeded');

      // The submit's log lines: every one carries the same trace id (and its span's id).
      const logged = logOf(requestId);
      expect(logged.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
      const traceIds = new Set(logged.map((l) => l.trace_id));
      expect(traceIds.size, JSON.stringify(logged)).toBe(1);
      const traceId = String([...traceIds][0]);
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      for (const l of logged) expect(l.span_id).toMatch(/^[0-9a-f]{16}$/);

      // Jaeger has it whole once the processes' batches are flushed (a second or so). A video's
      // provider step is startProviderRun (the simulator answers its output in that one call).
      const expected = [
        'POST /api/v1/generate',
        'SignalWithStartWorkflow:generation|StartWorkflow:generation',
        'RunWorkflow:generation',
        'StartActivity:startProviderRun',
        'RunActivity:startProviderRun',
        'provider simulator',
        'ledger admit',
        'ledger start running',
        'ledger settle',
      ];
      const found = await traceHolding(traceId, expected);

      const spans = found.spans;
      const named = (n: string) => spans.filter((s) => s.operationName === n);
      const serviceOf = (s: JaegerSpan) => found.processes[s.processID]?.serviceName;
      const [httpSpan] = named('POST /api/v1/generate');
      expect(httpSpan!.references).toEqual([]); // the root
      expect(tagOf(httpSpan!, 'http.response.status_code')).toBe(202);
      expect(tagOf(httpSpan!, 'http.route')).toBe('/api/v1/generate');
      expect(serviceOf(httpSpan!)).toBe('gensvc-api');
      expect(logged.some((l) => l.span_id === httpSpan!.spanID)).toBe(true);
      const [run] = named('RunWorkflow:generation');
      expect(serviceOf(run!)).toBe('gensvc-worker');
      const [provider] = named('provider simulator');
      expect(serviceOf(provider!)).toBe('gensvc-worker');
      expect(tagOf(provider!, 'gensvc.generation_id')).toBe(id);
      expect(tagOf(provider!, 'gensvc.model')).toBe('kling');
      // The provider call is inside the provider activity's run, in this trace.
      const [runProvider] = named('RunActivity:startProviderRun');
      expect(provider!.references).toEqual([
        expect.objectContaining({ refType: 'CHILD_OF', traceID: traceId, spanID: runProvider!.spanID }),
      ]);
      // Every span hangs from another one of the trace: nothing of it started a trace of its own.
      const ids = new Set(spans.map((s) => s.spanID));
      for (const s of spans)
        if (s !== httpSpan)
          expect(
            s.references.some((r) => ids.has(r.spanID)),
            s.operationName,
          ).toBe(true);
      // The ledger's local activities are in it too.
      expect(spans.filter((s) => s.operationName.startsWith('RunActivity:')).length).toBeGreaterThan(1);

      // The ledger's transactions, each under the step that ran it and saying what came of it: the
      // hold in the request, the slot's claim (asked again until granted) and the settle in their activities.
      const parentOf = (s: JaegerSpan) =>
        spans.find((p) => p.spanID === s.references.find((r) => r.refType === 'CHILD_OF')?.spanID);
      const [admitted] = named('ledger admit');
      expect(parentOf(admitted!)).toBe(httpSpan);
      expect(serviceOf(admitted!)).toBe('gensvc-api');
      expect(tagOf(admitted!, 'gensvc.generation_id')).toBe(id);
      expect(tagOf(admitted!, 'gensvc.ledger.outcome')).toBe('admitted');
      expect(tagOf(admitted!, 'db.system')).toBe('postgresql');
      const claims = named('ledger start running');
      // The first look is in place (a local activity); a video that found no slot free waits with the activity.
      const lookedFrom = new Set(claims.map((s) => parentOf(s)?.operationName));
      expect(lookedFrom).toContain('RunActivity:claimVideoSlotInPlace');
      expect([...lookedFrom].every((n) => /^RunActivity:claimVideoSlot(InPlace)?$/.test(n ?? ''))).toBe(true);
      expect(claims.map((s) => tagOf(s, 'gensvc.ledger.outcome')).sort()).toEqual([
        'running',
        ...claims.slice(1).map(() => 'waiting'),
      ]);
      const settles = named('ledger settle');
      expect(settles).toHaveLength(1);
      const settled = settles[0]!;
      expect(parentOf(settled)?.operationName).toBe('RunActivity:settle');
      expect(serviceOf(settled)).toBe('gensvc-worker');
      expect(tagOf(settled, 'gensvc.generation_id')).toBe(id);
      expect(tagOf(settled, 'gensvc.ledger.outcome')).toBe('settled');
      expect(named('ledger release')).toEqual([]);

      // And the provider call of this generation is in no other trace.
      const tags = encodeURIComponent(JSON.stringify({ 'gensvc.generation_id': id }));
      const withIt = await query<JaegerTrace[]>(
        `/api/traces?service=gensvc-worker&operation=${encodeURIComponent('provider simulator')}&tags=${tags}&lookback=1h&limit=20`,
      );
      expect(withIt.status).toBe(200);
      expect(withIt.body.data.map((t) => t.traceID)).toEqual([traceId]);

      // Probes are not traced: they would bury the traces that matter.
      const operations = await query<string[]>('/api/services/gensvc-api/operations');
      expect(operations.body.data).toContain('POST /api/v1/generate');
      expect(operations.body.data.filter((o) => /\/health|\/metrics/.test(o))).toEqual([]);

      // The completion's webhook: its delivery workflow, and the attempt inside it, in a trace of its
      // own; the attempt links (FOLLOWS_FROM) to the settle that wrote the event to the outbox.
      await receiver!.until(1);
      const endpointTag = encodeURIComponent(JSON.stringify({ 'gensvc.endpoint_id': endpoint.body.id }));
      const delivery = await eventually(
        async () => {
          const res = await query<JaegerTrace[]>(
            `/api/traces?service=gensvc-worker&operation=${encodeURIComponent('webhook attempt')}&tags=${endpointTag}&lookback=1h&limit=20`,
          );
          const [t] = res.body.data;
          return t?.spans.some((s) => s.operationName === 'RunWorkflow:webhookDelivery') ? res.body.data : undefined;
        },
        30_000,
        500,
      );
      expect(delivery).toHaveLength(1);
      const attempt = delivery[0]!.spans.find((s) => s.operationName === 'webhook attempt')!;
      const attemptRun = delivery[0]!.spans.find((s) => s.operationName === 'RunActivity:attemptWebhookDelivery');
      expect(attempt.references).toEqual([
        expect.objectContaining({ refType: 'CHILD_OF', traceID: delivery[0]!.traceID, spanID: attemptRun?.spanID }),
        expect.objectContaining({ refType: 'FOLLOWS_FROM', traceID: traceId, spanID: settled.spanID }),
      ]);
      expect(delivery[0]!.traceID).not.toBe(traceId);
    });
  }, 120_000);

  it('a chat the API streams itself (group B) is one trace: the HTTP span holding the hold, the provider stream and the settle', async () => {
    await explained(async () => {
      const account = await http<{ id: string }>('POST', '/admin/v1/accounts', {
        token: ADMIN_TOKEN,
        body: { plan: 'samurai', credits: 100, chatCap: 0 },
      });
      const key = await http<{ key: string }>('POST', `/admin/v1/accounts/${account.body.id}/keys`, {
        token: ADMIN_TOKEN,
        body: { scopes: ['chat'] },
      });
      expect(key.status).toBe(201);
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.body.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-5.5',
          messages: [{ role: 'user', content: 'tell me sim:tokens=5' }],
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('data: [DONE]');
      const traceId = String(logOf(res.headers.get('x-request-id')).find((l) => l.trace_id)?.trace_id);
      const t = await traceHolding(traceId, [
        'POST /v1/chat/completions',
        'provider simulator',
        'ledger admit',
        'ledger settle',
      ]);
      const [httpSpan] = t.spans.filter((s) => s.operationName === 'POST /v1/chat/completions');
      const inHttp = expect.objectContaining({ refType: 'CHILD_OF', spanID: httpSpan!.spanID });
      const [stream] = t.spans.filter((s) => s.operationName === 'provider simulator');
      expect(stream!.references).toEqual([inHttp]);
      expect(tagOf(stream!, 'gensvc.kind')).toBe('chat');
      const ledger = t.spans.filter((s) => s.operationName.startsWith('ledger '));
      expect(ledger.map((s) => [s.operationName, tagOf(s, 'gensvc.ledger.outcome')]).sort()).toEqual([
        ['ledger admit', 'admitted'],
        ['ledger settle', 'settled'],
      ]);
      for (const s of ledger) expect(s.references).toEqual([inHttp]);
    });
  });
});
