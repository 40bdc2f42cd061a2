/**
 * The routing record of a generation (generation_upstreams: what was tried, who served it, what it
 * cost us) survives PostgreSQL going away at the moment the upstream answers. The router's own
 * write of it is best effort (a produced image is not failed over bookkeeping); here it reaches
 * the database through a TCP proxy that is cut for the run (the breaker and the ledger keep theirs),
 * so that write fails; the entry travels with the provider's result and the settle records it with
 * the charge, once.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createPool } from '../../../../core/db/pool';
import { createPgRouteLog, createPgUpstreamHealth } from '../../../../core/db/upstreams';
import { settle } from '../../../../core/ledger';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { createProviderRouter } from '../../../../core/providers/router';
import type { RouteLog } from '../../../../core/db/upstreams';
import { createSimulator } from '../../../../core/providers/simulator';
import { credits, generateV1, routingOf, untilFinishedV1 } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startTcpProxy } from '../../../support/tcp-proxy';
import type { TcpProxy } from '../../../support/tcp-proxy';
import { startOpenAiUpstream, startQueueVideoUpstream } from '../../../support/upstream-servers';

let h: Harness;
let oaA: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let oaB: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let falA: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let falB: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let proxy: TcpProxy;
let routePool: pg.Pool;
/** The router's record, through the proxy: set once the harness's database exists. */
let routeLog: RouteLog | undefined;
let client: (key: string) => OpenAI;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });
/** What the router's store said each time it failed: the record's writes must have been tried, and failed. */
const warnings: string[] = [];

beforeAll(async () => {
  [oaA, oaB, falA, falB] = await Promise.all([
    startOpenAiUpstream(),
    startOpenAiUpstream(),
    startQueueVideoUpstream(),
    startQueueVideoUpstream(),
  ]);
  const config = upstreamsSchema.parse({
    breaker: { failures: 50, cooldownMs: 1_000 },
    upstreams: [
      {
        name: 'oa-a',
        protocol: 'openai',
        baseUrl: oaA.baseUrl,
        timeoutMs: 2_000,
        models: {
          'gpt-image-1': { model: 'a-image', costEur: 0.02 },
          'claude-sonnet': { model: 'a-sonnet', costEur: 0.004 },
        },
      },
      {
        name: 'oa-b',
        protocol: 'openai',
        baseUrl: oaB.baseUrl,
        timeoutMs: 2_000,
        models: {
          'gpt-image-1': { model: 'b-image', costEur: 0.03 },
          'claude-sonnet': { model: 'b-sonnet', costEur: 0.005 },
        },
      },
      {
        name: 'fal-a',
        protocol: 'queue-video',
        baseUrl: falA.baseUrl,
        timeoutMs: 2_000,
        pollMs: 20,
        models: { kling: { model: 'fal-ai/kling', costEur: 0.5 } },
      },
      {
        name: 'fal-b',
        protocol: 'queue-video',
        baseUrl: falB.baseUrl,
        timeoutMs: 2_000,
        pollMs: 20,
        models: { kling: { model: 'fal-ai/kling-b', costEur: 0.6 } },
      },
    ],
  });
  h = await startHarness({
    // The breaker reads and writes the working database; only the record's own writes meet the outage.
    provider: (pool) =>
      createProviderRouter(config.upstreams, createSimulator(), http, {
        health: createPgUpstreamHealth(pool, config.breaker),
        log: { record: (generationId, entry) => routeLog!.record(generationId, entry) },
        warn: (message) => void warnings.push(message),
      }),
  });
  const database = new URL(h.databaseUrl);
  proxy = await startTcpProxy({ host: database.hostname, port: Number(database.port) });
  database.port = String(proxy.port);
  routePool = createPool(database.toString(), 2);
  routeLog = createPgRouteLog(routePool);
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  client = (key) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([oaA, oaB, falA, falB].map((s) => s?.close()));
  await routePool?.end();
  await proxy?.close();
  http.close();
});
beforeEach(() => {
  for (const s of [oaA, oaB, falA, falB]) s.always.directives = '';
  warnings.length = 0;
});
afterEach(() => proxy.restore());

/** PostgreSQL goes away for the router's record (its open connection dropped, new ones refused) until the test ends. */
const recordGoesAway = async (): Promise<void> => {
  await routePool.query('SELECT 1');
  proxy.cut();
};

const generate = (key: string, body: Record<string, unknown>) => generateV1(h, key, body);
const finished = (key: string, id: string) => untilFinishedV1(h, key, id);
const routing = (id: string) => routingOf(h, id);
const callsOf = async (id: string): Promise<string[]> =>
  (await h.pool.query<{ calls: string[] }>('SELECT calls FROM generation_upstreams WHERE generation_id = $1', [id]))
    .rows[0]?.calls ?? [];

describe('the routing record when PostgreSQL is out of reach as the upstream answers', () => {
  it('an image that fell back is recorded by its settle: served by the second upstream, both tried, its cost', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    await recordGoesAway();
    oaA.always.directives = 'up:status=503';
    const g = await generate(key, { kind: 'image', model: 'gpt-image-1', prompt: 'a cube while the record is down' });
    expect(g).toMatchObject({ status: 'succeeded', creditsCharged: 6, provider: 'oa-b' });
    expect(warnings).toContain('upstream routing: recording the upstreams failed');
    expect(await routing(g.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.03 });

    // A retried settle (its first answer lost) carries the same entry: the record takes it once.
    const [call] = await callsOf(g.id);
    const entry = { call: call!, tried: ['oa-a', 'oa-b'], servedBy: 'oa-b', costEur: 0.03 };
    expect(await settle(h.pool, { generationId: g.id, outputKey: null, outputText: null, routes: [entry] })).toEqual({
      outcome: 'already',
      state: 'settled',
    });
    expect(await routing(g.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.03 });
    expect(await callsOf(g.id)).toEqual([call]);
    expect(await credits(h, key)).toMatchObject({ balance: 100 - 6, holdsActive: 0 });
  });

  it('a queued video waited for without a worker: the submit’s tries and the collect’s upstream and cost are both settled', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['video'] });
    await recordGoesAway();
    falA.always.directives = 'up:status=503';
    const queued = await generate(key, {
      kind: 'video',
      model: 'kling',
      prompt: 'waves while the record is down up:polls=2',
      seconds: 5,
    });
    const g = await finished(key, queued.id);
    expect(g).toMatchObject({ status: 'succeeded', creditsCharged: 42.5, provider: 'fal-b' });
    expect(warnings).toContain('upstream routing: recording the upstreams failed');
    expect(await routing(g.id)).toEqual({ upstream: 'fal-b', tried: ['fal-a', 'fal-b'], costEur: 3 });
    expect(await callsOf(g.id)).toHaveLength(2);
  }, 60_000);

  it('a streamed chat the API runs itself (group B) is recorded by the API’s own settle', async () => {
    const { key } = await h.account({ credits: 10 });
    await recordGoesAway();
    oaA.always.directives = 'up:status=503';
    const stream = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'record me up:tokens=4 up:usage=4' }],
      max_tokens: 50,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('alpha beta gamma delta');
    const after = await eventually(async () => {
      const c = await credits(h, key);
      return c.holdsActive === 0 ? c : undefined;
    });
    expect(after.balance).toBe(10 - chargeForTokens(4, 2000) / 1000);
    expect(warnings).toContain('upstream routing: recording the upstreams failed');
    const {
      rows: [row],
    } = await h.pool.query<{ id: string }>(`SELECT id FROM generations WHERE prompt LIKE '%record me up:tokens=4%'`);
    expect(await routing(row!.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.00002 });
  });

  it('with PostgreSQL there, the router’s write and the settle’s are one entry: nothing tried twice', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    oaA.always.directives = 'up:status=503';
    const g = await generate(key, { kind: 'image', model: 'gpt-image-1', prompt: 'a cube with the record up' });
    expect(g).toMatchObject({ status: 'succeeded', provider: 'oa-b' });
    expect(warnings).toEqual([]);
    expect(await routing(g.id)).toEqual({ upstream: 'oa-b', tried: ['oa-a', 'oa-b'], costEur: 0.03 });
    expect(await callsOf(g.id)).toHaveLength(1);
  });
});
