/**
 * Several upstreams per model, against local servers that speak each protocol: an
 * upstream failing on its side before it produced anything passes the same generation on to the
 * next (one hold, one charge); a refusal about the request is final; an upstream failing N times
 * in a row is skipped (state in PostgreSQL) and probed again after its cooldown; a stream that
 * broke after its first token is not asked elsewhere. The margin report sums to the ledger.
 * Replicate's predictions protocol: Prefer: wait, polling, versions, and cancel.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import type { AddressInfo } from 'node:net';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { run as gensvc } from '../../../../cli/run';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createPgRouteLog, createPgUpstreamHealth } from '../../../../core/db/upstreams';
import { EUR_PER_MC } from '../../../../core/money';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { lossRoutes } from '../../../../core/providers/margins';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { GenerationProvider } from '../../../../core/search-attributes';
import { credits, generateV1, routingOf, untilFinishedV1, untilStarted } from '../../../support/api';
import type { GroupAGeneration } from '../../../support/api';
import { ADMIN_TOKEN, eventually, startHarness } from '../../../support/harness';
import { keepHistory, patchIdsOf } from '../../../support/histories';
import type { Harness } from '../../../support/harness';
import {
  startOpenAiUpstream,
  startQueueVideoUpstream,
  startReplicateUpstream,
} from '../../../support/upstream-servers';

let h: Harness;
let oaA: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let oaB: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let falA: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let falB: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let rep: Awaited<ReturnType<typeof startReplicateUpstream>>;
let client: (key: string) => OpenAI;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });
const COOLDOWN_MS = 1_500;

/** A loopback port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  [oaA, oaB, falA, falB, rep] = await Promise.all([
    startOpenAiUpstream(),
    startOpenAiUpstream(),
    startQueueVideoUpstream(),
    startQueueVideoUpstream(),
    startReplicateUpstream(),
  ]);
  const dead = `http://127.0.0.1:${await closedPort()}/v1`;
  // The same JSON an operator puts in UPSTREAMS_JSON, through the same schema.
  const config = upstreamsSchema.parse({
    breaker: { failures: 2, cooldownMs: COOLDOWN_MS },
    upstreams: [
      {
        name: 'oa-a',
        protocol: 'openai',
        baseUrl: oaA.baseUrl,
        timeoutMs: 400,
        models: {
          'gpt-image-1': { model: 'a-image', costEur: 0.02 },
          'claude-sonnet': { model: 'a-sonnet', costEur: 0.004 },
          'gpt-image-1-high': { model: 'a-high', priority: 5, weight: 3 },
        },
      },
      {
        name: 'oa-b',
        protocol: 'openai',
        baseUrl: oaB.baseUrl,
        timeoutMs: 400,
        models: {
          'gpt-image-1': { model: 'b-image', costEur: 0.03 },
          'claude-sonnet': { model: 'b-sonnet', costEur: 0.005 },
          'gpt-5.5': { model: 'b-gpt', priority: 1 },
          'gpt-image-1-high': { model: 'b-high', priority: 5, weight: 1 },
        },
      },
      {
        name: 'dead',
        protocol: 'openai',
        baseUrl: dead,
        timeoutMs: 400,
        models: { 'gpt-5.5': { model: 'x', priority: 0 } },
      },
      {
        name: 'fal-a',
        protocol: 'queue-video',
        baseUrl: falA.baseUrl,
        timeoutMs: 400,
        pollMs: 20,
        models: { kling: { model: 'fal-ai/kling', costEur: 0.5 } },
      },
      {
        name: 'fal-b',
        protocol: 'queue-video',
        baseUrl: falB.baseUrl,
        timeoutMs: 400,
        pollMs: 20,
        models: { kling: { model: 'fal-ai/kling-b', costEur: 0.6 } },
      },
      {
        name: 'rep',
        protocol: 'replicate',
        baseUrl: rep.baseUrl,
        apiKey: 'r8_test',
        timeoutMs: 3_000,
        pollMs: 20,
        models: {
          'image-flux': { model: 'black-forest-labs/flux-schnell', costEur: 0.003 },
          'image-qwen': 'qwen/qwen-image:5b6f1c9e',
          wan: 'wan-video/wan-2.1',
        },
      },
    ],
  });
  h = await startHarness({
    provider: (pool) =>
      createProviderRouter(config.upstreams, createSimulator(), http, {
        health: createPgUpstreamHealth(pool, config.breaker),
        log: createPgRouteLog(pool),
      }),
  });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  client = (key) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([oaA, oaB, falA, falB, rep].map((s) => s?.close()));
  http.close();
});
beforeEach(async () => {
  for (const s of [oaA, oaB, falA, falB, rep]) s.always.directives = '';
  await h.pool.query('DELETE FROM upstream_health');
});

type Generated = GroupAGeneration;
const generateA = (key: string, body: Record<string, unknown>): Promise<Generated> => generateV1(h, key, body);
const finished = (key: string, id: string): Promise<Generated> => untilFinishedV1(h, key, id);
const routing = (id: string) => routingOf(h, id);
/** The ledger's movements of one generation, by kind. */
const entries = async (id: string): Promise<Record<string, number>> => {
  const r = await h.pool.query<{ entry: string; n: number }>(
    'SELECT entry, count(*)::int AS n FROM ledger_entries WHERE generation_id = $1 GROUP BY entry',
    [id],
  );
  return Object.fromEntries(r.rows.map((row) => [row.entry, row.n]));
};
const images = (s: { received: { path: string }[] }) =>
  s.received.filter((r) => r.path === '/v1/images/generations').length;
const chats = (s: { received: { path: string }[] }) =>
  s.received.filter((r) => r.path === '/v1/chat/completions').length;

describe('fallback to the next upstream', () => {
  it('a 503, a 429 and a timeout of the first pass the image to the second: served there, held once, charged once', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    for (const failure of ['up:status=503', 'up:status=429', 'up:hang']) {
      await h.pool.query('DELETE FROM upstream_health');
      oaA.always.directives = failure;
      const [a, b] = [images(oaA), images(oaB)];
      const g = await generateA(key, { kind: 'image', model: 'gpt-image-1', prompt: `a cube (${failure})` });
      expect(g, failure).toMatchObject({ status: 'succeeded', creditsCharged: 6, provider: 'oa-b' });
      expect([images(oaA) - a, images(oaB) - b], failure).toEqual([1, 1]);
      expect(oaB.received.at(-1)!.body).toMatchObject({ model: 'b-image' });
      expect(await entries(g.id), failure).toEqual({ hold: 1, charge: 1 });
      expect(await routing(g.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.03 });
    }
    expect(await credits(h, key)).toMatchObject({ balance: 100 - 3 * 6, holdsActive: 0 });
  }, 60_000);

  it('a refused connection passes the chat (activity path) to the next upstream by priority', async () => {
    const { key } = await h.account({ credits: 50, scopes: ['chat'] });
    const g = await generateA(key, { kind: 'chat', model: 'gpt-5.5', prompt: 'up:tokens=3', max_tokens: 20 });
    expect(g).toMatchObject({ status: 'succeeded', creditsCharged: chargeForTokens(3, 1500) / 1000, provider: 'oa-b' });
    expect(await routing(g.id)).toEqual({ upstream: 'oa-b', tried: ['dead', 'oa-b'], costEur: null });
    // The unused part of the hold (20 tokens held, 3 produced) goes back beside the one charge.
    expect(await entries(g.id)).toEqual({ hold: 1, charge: 1, release: 1 });
  });

  it('a queued video whose first upstream answers 503 at submit is submitted to the second; the workflow shows GenerationProvider', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['video'] });
    falA.always.directives = 'up:status=503';
    const [a, b] = [falA.submits(), falB.submits()];
    const queued = await generateA(key, { kind: 'video', model: 'kling', prompt: 'waves up:polls=2', seconds: 5 });
    const g = await finished(key, queued.id);
    expect(g).toMatchObject({ status: 'succeeded', creditsCharged: 42.5, provider: 'fal-b' });
    expect([falA.submits() - a, falB.submits() - b]).toEqual([1, 1]);
    expect(await entries(g.id)).toEqual({ hold: 1, charge: 1 });
    expect(await routing(g.id)).toEqual({ upstream: 'fal-b', tried: ['fal-a', 'fal-b'], costEur: 3 });
    const attribute = await eventually(async () => {
      const d = await h.client.workflow.getHandle(g.id).describe();
      return d.typedSearchAttributes.get(GenerationProvider);
    });
    expect(attribute).toBe('fal-b');

    // The attribute's upsert is a plain command now that the patch that introduced it is retired
    // (no marker of its own; the one marker is the video's first look for its slot in place): its
    // history replays on this code.
    const { stdout } = await promisify(execFile)(
      inject('temporalCliPath'),
      ['workflow', 'show', '--address', inject('temporalAddress'), '--workflow-id', g.id, '--output', 'json'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    expect(patchIdsOf(stdout)).toEqual(['video-slot-in-place']);
    const history = await h.client.workflow.getHandle(g.id).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { code: await readFile(inject('workflowBundlePath'), 'utf8') } },
      history,
      g.id,
    );
    // RECORD_HISTORIES=1 adds this path to the fixtures test/unit/workflows/replay-fixtures.test.ts replays.
    if (process.env.RECORD_HISTORIES === '1') await keepHistory(g.id, 'video-succeeded-served-by-fallback');
  }, 60_000);

  it('a content-policy refusal is final: no other upstream is asked, nothing charged', async () => {
    const { key } = await h.account({ credits: 20, scopes: ['image'] });
    const [a, b] = [images(oaA), images(oaB)];
    const g = await generateA(key, { kind: 'image', model: 'gpt-image-1', prompt: 'up:status=400 up:policy' });
    expect(g).toMatchObject({ status: 'failed', creditsCharged: 0, provider: null, error: { code: 'content_policy' } });
    expect([images(oaA) - a, images(oaB) - b]).toEqual([1, 0]);
    expect(await entries(g.id)).toEqual({ hold: 1, release: 1 });
    expect(await credits(h, key)).toMatchObject({ balance: 20, holdsActive: 0 });
  });
});

describe('load sharing', () => {
  it('upstreams of equal priority share the load by weight (3 : 1)', async () => {
    const { key } = await h.account({ credits: 60 * 17, scopes: ['image'] });
    const served: Generated[] = [];
    for (let batch = 0; batch < 6; batch++) {
      served.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            generateA(key, { kind: 'image', model: 'gpt-image-1-high', prompt: `share ${batch}.${i}` }),
          ),
        )),
      );
    }
    const count = (upstream: string) =>
      served.filter((g) => g.status === 'succeeded' && g.provider === upstream).length;
    expect(count('oa-a') + count('oa-b')).toBe(60);
    // 45 expected on the heavier one: fewer than 31 is more than four standard deviations off.
    expect(count('oa-a')).toBeGreaterThan(30);
    expect(count('oa-b')).toBeGreaterThan(0);
  }, 120_000);
});

describe('the circuit breaker', () => {
  it('skips an upstream that failed twice in a row, across calls, and probes it again after the cooldown', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    oaA.always.directives = 'up:status=503';
    const a = images(oaA);
    for (let i = 0; i < 2; i++)
      expect(await generateA(key, { kind: 'image', model: 'gpt-image-1', prompt: `fail ${i}` })).toMatchObject({
        status: 'succeeded',
        provider: 'oa-b',
      });
    expect(images(oaA) - a).toBe(2);
    const {
      rows: [cooled],
    } = await h.pool.query<{ failures: number; ahead: boolean }>(
      `SELECT failures, cooled_until > now() AS ahead FROM upstream_health WHERE upstream = 'oa-a'`,
    );
    expect(cooled).toEqual({ failures: 2, ahead: true });

    // Cooled down: not asked at all, even though it would answer now.
    oaA.always.directives = '';
    const skipped = await generateA(key, { kind: 'image', model: 'gpt-image-1', prompt: 'skipped' });
    expect(skipped).toMatchObject({ status: 'succeeded', provider: 'oa-b' });
    expect(images(oaA) - a).toBe(2);
    expect((await routing(skipped.id)).tried).toEqual(['oa-b']);

    // After the cooldown one call probes it; it answers, and it is first again.
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 200));
    const probed = await generateA(key, { kind: 'image', model: 'gpt-image-1', prompt: 'probe' });
    expect(probed).toMatchObject({ status: 'succeeded', provider: 'oa-a', creditsCharged: 6 });
    expect(images(oaA) - a).toBe(3);
    const {
      rows: [healed],
    } = await h.pool.query<{ failures: number; cooled_until: Date | null }>(
      `SELECT failures, cooled_until FROM upstream_health WHERE upstream = 'oa-a'`,
    );
    expect(healed).toEqual({ failures: 0, cooled_until: null });
  }, 60_000);

  it('only one caller claims the probe of an upstream whose cooldown is over', async () => {
    const health = createPgUpstreamHealth(h.pool, { failures: 1, cooldownMs: 100 });
    await health.failed('probe-me');
    expect(await health.admit('probe-me')).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const claims = await Promise.all(Array.from({ length: 8 }, () => health.admit('probe-me')));
    expect(claims.filter(Boolean)).toHaveLength(1);
  });
});

describe('a streamed chat (group B)', () => {
  it('falls back before its first token: served by the second upstream, billed by its usage', async () => {
    const { key } = await h.account({ credits: 10 });
    oaA.always.directives = 'up:status=503';
    const [a, b] = [chats(oaA), chats(oaB)];
    const stream = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'hi up:tokens=4 up:usage=4' }],
      max_tokens: 50,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('alpha beta gamma delta');
    expect([chats(oaA) - a, chats(oaB) - b]).toEqual([1, 1]);
    expect(oaB.received.at(-1)!.body).toMatchObject({ model: 'b-sonnet' });
    const after = await eventually(async () => {
      const c = await credits(h, key);
      return c.holdsActive === 0 ? c : undefined;
    });
    expect(after.balance).toBe(10 - chargeForTokens(4, 2000) / 1000);
    const {
      rows: [g],
    } = await h.pool.query<{ id: string }>(
      `SELECT id FROM generations WHERE prompt LIKE '%hi up:tokens=4 up:usage=4%'`,
    );
    expect(await routing(g!.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.00002 });
  });

  it('a stream that breaks after its first token is not asked elsewhere, and costs the customer nothing, as before', async () => {
    const { key } = await h.account({ credits: 10 });
    const [a, b] = [chats(oaA), chats(oaB)];
    const stream = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'hi up:tokens=6 up:pace=50 up:cut=2' }],
      max_tokens: 50,
      stream: true,
    });
    let deltas = 0;
    const failure = await (async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) deltas++;
    })().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeDefined();
    expect(deltas).toBe(2);
    expect([chats(oaA) - a, chats(oaB) - b]).toEqual([1, 0]);
    const after = await eventually(async () => {
      const c = await credits(h, key);
      return c.holdsActive === 0 ? c : undefined;
    });
    expect(after.balance).toBe(10);
    const {
      rows: [g],
    } = await h.pool.query<{ id: string; status: string }>(
      `SELECT g.id, g.status FROM generations g JOIN generation_upstreams u ON u.generation_id = g.id WHERE g.prompt LIKE '%up:cut=2%'`,
    );
    expect(g!.status).toBe('failed');
    // The upstream produced two tokens we pay for: its cost is recorded, the customer's charge is nothing.
    expect(await routing(g!.id)).toEqual({ upstream: 'oa-a', tried: ['oa-a'], costEur: 0.000008 });
  });
});

describe('Replicate’s predictions protocol', () => {
  it('a short job answers in the create call (Prefer: wait); a longer one is polled; a version is created through /v1/predictions; outputs are stored', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const before = rep.received.length;
    const quick = await generateA(key, { kind: 'image', model: 'image-flux', prompt: 'a fox up:polls=0' });
    expect(quick).toMatchObject({ status: 'succeeded', provider: 'rep' });
    const calls = rep.received.slice(before);
    expect(calls[0]).toMatchObject({
      method: 'POST',
      path: '/v1/models/black-forest-labs/flux-schnell/predictions',
      authorization: 'Bearer r8_test',
      body: { input: { prompt: 'a fox up:polls=0' } },
    });
    expect(calls.filter((c) => c.method === 'GET' && c.path.startsWith('/v1/predictions/'))).toHaveLength(0);
    const file = await h.call('GET', new URL(quick.outputUrl).pathname + new URL(quick.outputUrl).search);
    expect(file.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    expect(await routing(quick.id)).toEqual({ upstream: 'rep', tried: ['rep'], costEur: 0.003 });

    const mark = rep.received.length;
    const polled = await generateA(key, { kind: 'image', model: 'image-qwen', prompt: 'a hare up:polls=3' });
    expect(polled).toMatchObject({ status: 'succeeded', provider: 'rep' });
    const later = rep.received.slice(mark);
    expect(later[0]).toMatchObject({
      method: 'POST',
      path: '/v1/predictions',
      body: { version: '5b6f1c9e', input: { prompt: 'a hare up:polls=3' } },
    });
    expect(later.filter((c) => c.method === 'GET' && c.path.startsWith('/v1/predictions/'))).toHaveLength(3);
  });

  it('a failed prediction is final; cancelling a generation cancels its prediction', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['image', 'video'] });
    const failed = await generateA(key, { kind: 'image', model: 'image-flux', prompt: 'up:fail up:polls=1' });
    expect(failed).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'content_policy' } });

    const queued = await generateA(key, { kind: 'video', model: 'wan', prompt: 'slow up:polls=100000', seconds: 5 });
    await untilStarted(h, queued.id);
    const prediction = await eventually(async () =>
      [...rep.predictions.values()].find((p) => (p.input as { prompt?: string }).prompt === 'slow up:polls=100000'),
    );
    const cancel = await h.call('POST', `/api/v1/generations/${queued.id}/cancel`, { key });
    expect(cancel.statusCode).toBe(200);
    await eventually(async () => (rep.cancels().includes(String(prediction.id)) ? true : undefined));
    expect(prediction.status).toBe('canceled');
    expect(await finished(key, queued.id)).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'cancelled' },
    });
  }, 60_000);
});

describe('image edits on upstreams', () => {
  it('an OpenAI-compatible upstream gets multipart /images/edits with the image and mask; Replicate gets them as data URLs; each charged as an image', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const png = (colour: string) =>
      sharp({ create: { width: 64, height: 64, channels: 4, background: colour } })
        .png()
        .toBuffer();
    const [photo, mask] = await Promise.all([png('#36c'), png('#0000')]);
    const edited = await client(key).images.edit({
      model: 'gpt-image-1',
      prompt: 'paint the sky red',
      image: await toFile(photo, 'photo.png', { type: 'image/png' }),
      mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
    });
    expect(edited.data?.[0]?.b64_json).toEqual(expect.any(String));
    const asked = [...oaA.received, ...oaB.received].filter((r) => r.path === '/v1/images/edits');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.body).toMatchObject({
      model: expect.stringMatching(/^[ab]-image$/),
      prompt: 'paint the sky red',
      n: '1',
      image: { type: 'image/png', size: expect.any(Number) },
      mask: { type: 'image/png', size: expect.any(Number) },
    });
    // The upstream's own id is no gpt-image one, so base64 is asked for by name.
    expect(asked[0]!.body).toMatchObject({ response_format: 'b64_json' });

    const before = rep.received.length;
    const viaReplicate = await client(key).images.edit({
      model: 'image-qwen',
      prompt: 'a hat on the fox',
      image: [await toFile(photo, 'a.png', { type: 'image/png' }), await toFile(photo, 'b.png', { type: 'image/png' })],
    });
    expect(viaReplicate.data?.[0]?.url).toEqual(expect.any(String));
    const input = rep.received.slice(before).find((r) => r.method === 'POST')!.body!.input as Record<string, unknown>;
    expect(input).toMatchObject({
      prompt: 'a hat on the fox',
      image: expect.stringMatching(/^data:image\/png;base64,/),
      image_input: [
        expect.stringMatching(/^data:image\/png;base64,/),
        expect.stringMatching(/^data:image\/png;base64,/),
      ],
    });
    expect(input).not.toHaveProperty('mask');
    expect(await credits(h, key)).toMatchObject({ balance: 100 - 6 - 5, holdsActive: 0 });
  }, 60_000);
});

describe('cost and margin', () => {
  it('the report’s revenue is the ledger’s charges and its cost the recorded upstream costs, by model, upstream and day; gensvc prints it', async () => {
    const {
      rows: [ledger],
    } = await h.pool.query<{ revenue_mc: number; cost: string }>(
      `SELECT (SELECT COALESCE(sum(amount_mc), 0) FROM ledger_entries WHERE entry = 'charge')::bigint AS revenue_mc,
              (SELECT COALESCE(sum(cost_eur), 0) FROM generation_upstreams)::text AS cost`,
    );
    expect(ledger!.revenue_mc).toBeGreaterThan(0);
    const round = (x: number) => Math.round(x * 1e6) / 1e6;
    for (const groupBy of ['model', 'upstream', 'day']) {
      const res = await h.call('GET', `/admin/v1/usage?group_by=${groupBy}`, { key: ADMIN_TOKEN });
      expect(res.statusCode, res.body).toBe(200);
      const report = res.json<{
        rows: { key: string; revenueEur: number; costEur: number; marginEur: number }[];
        total: { revenueEur: number; costEur: number; marginEur: number };
      }>();
      expect(report.total.revenueEur, groupBy).toBe(round(ledger!.revenue_mc * EUR_PER_MC));
      expect(report.total.costEur, groupBy).toBe(round(Number(ledger!.cost)));
      expect(round(report.rows.reduce((s, r) => s + r.revenueEur, 0)), groupBy).toBe(report.total.revenueEur);
      expect(report.total.marginEur).toBe(round(report.total.revenueEur - report.total.costEur));
      if (groupBy === 'upstream') {
        const b = report.rows.find((r) => r.key === 'oa-b')!;
        expect(b.costEur).toBeGreaterThan(0);
        expect(b.marginEur).toBe(round(b.revenueEur - b.costEur));
      }
    }
    expect((await h.call('GET', '/admin/v1/usage?group_by=account', { key: ADMIN_TOKEN })).statusCode).toBe(400);

    // The CLI, through the same route.
    let out = '';
    const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const code = await gensvc(
      ['usage', '--group-by', 'upstream'],
      { GENSVC_URL: base, ADMIN_TOKEN },
      { fetch, stdout: (t) => (out += t), stderr: (t) => (out += t) },
    );
    expect(code, out).toBe(0);
    expect(out).toMatch(/^upstream\s+generations\s+revenue EUR\s+cost EUR\s+margin EUR/m);
    expect(out).toMatch(/^oa-b\s+\d+/m);
    expect(out).toMatch(/^total\s+\d+/m);
  });

  it('a model whose upstream costs more than it sells for is named for the start-up warning', () => {
    const config = upstreamsSchema.parse({
      upstreams: [
        {
          name: 'pricey',
          protocol: 'openai',
          baseUrl: 'http://127.0.0.1:9/v1',
          models: { 'gpt-image-1': { model: 'x', costEur: 0.5 }, 'claude-sonnet': { model: 'y', costEur: 0.001 } },
        },
      ],
    });
    expect(lossRoutes(config.upstreams)).toEqual([
      { model: 'gpt-image-1', upstream: 'pricey', costEur: 0.5, priceEur: 0.06 },
    ]);
  });
});
