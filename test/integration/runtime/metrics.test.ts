import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../runtime/process';
import { jsonLogger } from '../../../runtime/json-logger';
import { startMetricsServer } from '../../../runtime/metrics-server';
import { ADMIN_TOKEN, eventually, startHarness } from '../../support/harness';
import type { Harness } from '../../support/harness';
import { productionApi } from '../../support/production-api';
import { generate } from '../../support/api';
import { createConformance, loadDocument } from '../../support/openapi';

let h: Harness;
let c: ReturnType<typeof createConformance>;
beforeAll(async () => {
  h = await startHarness();
  c = createConformance(await loadDocument(h.app));
});
afterAll(async () => {
  await h?.close();
});

/** The value of one sample of the Prometheus text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (ok) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

const scrape = async () => {
  const res = await h.app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  c.conforms(res, 'get', '/metrics', 200);
  return res.body;
};

describe('GET /metrics', () => {
  it('is for the operator: 401 without the admin token', async () => {
    c.conforms(await h.app.inject({ method: 'GET', url: '/metrics' }), 'get', '/metrics', 401);
    const { key } = await h.account({ credits: 1 });
    c.conforms(
      await h.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${key}` } }),
      'get',
      '/metrics',
      401,
    );
  });

  it('counts requests by route and status, generations by kind and outcome, credits moved, holds in flight and latencies', async () => {
    const before = await scrape();
    const { key } = await h.account({ credits: 100 });
    await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a gate' });
    await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a gate sim:fail' });
    await generate(h, key, { kind: 'image', model: 'no-such', prompt: 'x' });
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'long sim:delay=60000' });
    const after = await eventually(async () => {
      const text = await scrape();
      return sample(text, 'gensvc_generations_finished_total', {
        kind: 'image',
        status: 'failed',
        code: 'provider_failed',
      }) >
        sample(before, 'gensvc_generations_finished_total', {
          kind: 'image',
          status: 'failed',
          code: 'provider_failed',
        })
        ? text
        : undefined;
    });
    const delta = (name: string, labels: Record<string, string> = {}) =>
      sample(after, name, labels) - sample(before, name, labels);

    expect(delta('gensvc_http_requests_total', { method: 'POST', route: '/api/generate', status: '200' })).toBe(3);
    expect(delta('gensvc_http_requests_total', { method: 'POST', route: '/api/generate', status: '400' })).toBe(1);
    expect(delta('gensvc_generations_admitted_total', { kind: 'image' })).toBe(2);
    expect(delta('gensvc_generations_admitted_total', { kind: 'video' })).toBe(1);
    expect(delta('gensvc_generations_finished_total', { kind: 'image', status: 'succeeded' })).toBe(1);
    expect(delta('gensvc_credits_held_total')).toBe(3 + 3 + 42.5);
    expect(delta('gensvc_credits_charged_total')).toBe(3);
    expect(delta('gensvc_credits_released_total')).toBe(3);
    expect(sample(after, 'gensvc_holds_active')).toBeGreaterThanOrEqual(1);
    expect(sample(after, 'gensvc_credits_on_hold')).toBeGreaterThanOrEqual(42.5);
    expect(delta('gensvc_provider_duration_seconds_count', { kind: 'image', outcome: 'succeeded' })).toBe(1);
    expect(delta('gensvc_provider_duration_seconds_count', { kind: 'image', outcome: 'rejected' })).toBe(1);
    expect(delta('gensvc_admission_duration_seconds_count', { kind: 'video' })).toBe(1);
    expect(after).toContain('gensvc_webhook_deliveries_total');
    expect(after).toContain('gensvc_process_resident_memory_bytes');

    await h.call('POST', `/api/v1/generations/${video.body.generation.id}/cancel`, { key });
    const settled = await scrape();
    expect(
      sample(settled, 'gensvc_generations_finished_total', { kind: 'video', status: 'failed', code: 'cancelled' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('a worker on its own serves its metrics on METRICS_PORT, to the operator only', async () => {
    const port = await freePort();
    const server = await startMetricsServer({ port, host: '127.0.0.1', adminToken: ADMIN_TOKEN });
    try {
      const ok = await fetch(`http://127.0.0.1:${port}/metrics`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('gensvc_provider_duration_seconds');
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe('JSON logs', () => {
  it('the API logs one JSON object per line, with the request id (kept from x-request-id) next to the generation id', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const app = await productionApi(h, {
      syncWaitMs: 20_000,
      logger: { level: 'info', stream },
    });
    try {
      const { key } = await h.account({ credits: 10 });
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/generate',
        headers: { authorization: `Bearer ${key}`, 'x-request-id': 'req-test-42' },
        payload: { kind: 'chat', prompt: 'hi' },
      });
      expect(res.headers['x-request-id']).toBe('req-test-42');
      const id = res.json<{ id: string }>().id;
      expect(lines).toContainEqual(
        expect.objectContaining({ reqId: 'req-test-42', generationId: id, msg: 'generation admitted' }),
      );
      const bad = await app.inject({
        method: 'GET',
        url: '/health',
        headers: { 'x-request-id': 'not ok\nforged line' },
      });
      expect(bad.headers['x-request-id']).toMatch(/^req_[0-9a-f]{24}$/);
    } finally {
      await app.close();
    }
  });

  it('the worker logs JSON lines that name the generation', () => {
    const written: string[] = [];
    const logger = jsonLogger('INFO', (line) => written.push(line));
    logger.info('provider run started', { workflowId: 'gen_01abc', activityType: 'runProvider', attempt: 1 });
    logger.debug('hidden below the level');
    expect(written).toHaveLength(1);
    expect(JSON.parse(written[0]!)).toMatchObject({
      level: 30,
      msg: 'provider run started',
      generationId: 'gen_01abc',
      activityType: 'runProvider',
      time: expect.any(Number),
    });
  });
});

describe('coverage of the document', () => {
  it('every documented status of /metrics was produced', () => {
    c.expectCoverage('metrics.test.ts');
  });
});
