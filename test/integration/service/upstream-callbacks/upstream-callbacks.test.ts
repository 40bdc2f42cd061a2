/**
 * Long upstream jobs hold no worker slot: a queued video is submitted, then waits in an
 * async-completed activity while the upstream works; the upstream's signed webhook (fal: ed25519
 * with keys from a JWKS; Replicate: Standard Webhooks) wakes it, or the slow poll finds the job
 * ended when no webhook comes. Against local servers that speak each protocol and call back as
 * each provider documents. A forged, altered, stale or replayed webhook changes nothing.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createPgRouteLog, createPgUpstreamHealth } from '../../../../core/db/upstreams';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { signFalWebhook, signStandardWebhook } from '../../../../core/providers/callback-signatures';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { freePort } from '../../../../runtime/process';
import { credits } from '../../../support/api';
import { keepHistory } from '../../../support/histories';
import { ADMIN_TOKEN, eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startQueueVideoUpstream, startReplicateUpstream } from '../../../support/upstream-servers';

let h: Harness;
let fal: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let falQuiet: Awaited<ReturnType<typeof startQueueVideoUpstream>>;
let rep: Awaited<ReturnType<typeof startReplicateUpstream>>;
let api: string;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });
/** Far longer than any test here: a video done sooner was woken by its webhook, not found by a poll. */
const SLOW_POLL_MS = 120_000;
/** The upstream whose webhooks never come: its videos are found by this poll. */
const QUIET_POLL_MS = 1_500;

beforeAll(async () => {
  [fal, falQuiet, rep] = await Promise.all([
    startQueueVideoUpstream(),
    startQueueVideoUpstream(),
    startReplicateUpstream(),
  ]);
  // The API listens where the upstreams were told to call back.
  const port = await freePort();
  api = `http://127.0.0.1:${port}`;
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'fal',
        protocol: 'queue-video',
        baseUrl: fal.baseUrl,
        auth: 'key',
        apiKey: 'fal-key',
        timeoutMs: 3_000,
        pollMs: 50,
        slowPollMs: SLOW_POLL_MS,
        jwksUrl: fal.jwksUrl,
        models: { kling: 'fal-ai/kling-video' },
      },
      {
        name: 'fal-quiet',
        protocol: 'queue-video',
        baseUrl: falQuiet.baseUrl,
        timeoutMs: 3_000,
        pollMs: 50,
        slowPollMs: QUIET_POLL_MS,
        jwksUrl: falQuiet.jwksUrl,
        models: { 'seedance-lite': 'fal-ai/seedance' },
      },
      {
        name: 'rep',
        protocol: 'replicate',
        baseUrl: rep.baseUrl,
        apiKey: 'r8_test',
        timeoutMs: 3_000,
        pollMs: 50,
        slowPollMs: SLOW_POLL_MS,
        webhookSecret: rep.secret,
        models: { wan: 'wan-video/wan-2.1' },
      },
    ],
  });
  h = await startHarness({
    provider: (pool) =>
      createProviderRouter(config.upstreams, createSimulator(), http, {
        health: createPgUpstreamHealth(pool, config.breaker),
        log: createPgRouteLog(pool),
        callbackBaseUrl: api,
      }),
    upstreamCallbacks: { upstreams: config.upstreams },
    videoConcurrency: 100,
  });
  await h.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([fal, falQuiet, rep].map((s) => s?.close()));
  http.close();
});

interface Generated {
  id: string;
  status: string;
  creditsCharged: number;
  error: { code: string } | null;
  outputUrl: string | null;
}

const video = async (key: string, model: string, prompt: string): Promise<Generated> => {
  const res = await h.call('POST', '/api/v1/generate', { key, body: { kind: 'video', model, prompt, seconds: 5 } });
  expect([200, 202], res.body).toContain(res.statusCode);
  return res.json<Generated>();
};
const finished = (key: string, id: string, timeoutMs = 30_000): Promise<Generated> =>
  eventually(async () => {
    const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<Generated>();
    return g.status === 'succeeded' || g.status === 'failed' ? g : undefined;
  }, timeoutMs);
const statusOf = async (key: string, id: string): Promise<string> =>
  (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<Generated>().status;
/** The upstream job a generation's run left waiting, once its wait has parked (no worker holds it). */
const parked = (generationId: string) =>
  eventually(
    async () => {
      const r = await h.pool.query<{ upstream: string; job_id: string; ended: boolean }>(
        'SELECT upstream, job_id, ended_at IS NOT NULL AS ended FROM upstream_jobs WHERE generation_id = $1 AND task_token IS NOT NULL',
        [generationId],
      );
      return r.rows[0];
    },
    20_000,
    50,
  );
/** The provider worker runs nothing: the waiting run gave its slot back. */
const slotsFree = () => eventually(async () => (h.providerActivitiesInFlight() === 0 ? true : undefined), 5_000, 20);
const entries = async (id: string): Promise<Record<string, number>> => {
  const r = await h.pool.query<{ entry: string; n: number }>(
    'SELECT entry, count(*)::int AS n FROM ledger_entries WHERE generation_id = $1 GROUP BY entry',
    [id],
  );
  return Object.fromEntries(r.rows.map((row) => [row.entry, row.n]));
};
const post = (path: string, headers: Record<string, string>, body: Buffer) =>
  fetch(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).then(
    async (res) => ({ status: res.status, body: (await res.json()) as { outcome?: string; error?: { type: string } } }),
  );
const now = () => Math.floor(Date.now() / 1000);
/** The generations of the waited-for paths, by the fixture name their history is kept under. */
const paths = new Map<string, string>();

/** Keeps each path's history as a fixture, never over one already kept. */
async function recordFixtures(): Promise<void> {
  for (const [name, workflowId] of paths) await keepHistory(workflowId, name);
}

describe('a fal video waits for its webhook holding no worker slot', () => {
  it('is submitted with fal_webhook, parks with no provider activity in flight, and is completed by the signed webhook: served, charged once', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video'] });
    const reads = fal.statusReads();
    const queued = await video(key, 'kling', 'a lake at dawn up:ms=2500');
    const job = await parked(queued.id);
    expect(job).toMatchObject({ upstream: 'fal', ended: false });
    // The run is waiting at the upstream and no worker runs anything for it.
    expect(await statusOf(key, queued.id)).toBe('running');
    await slotsFree();
    const submit = fal.received.find((r) => r.method === 'POST' && r.path.includes('fal_webhook='))!;
    expect(new URL(submit.path, 'http://x').searchParams.get('fal_webhook')).toBe(
      `${api}/providers/fal/webhook?upstream=fal`,
    );
    expect(submit.authorization).toBe('Key fal-key');

    const done = await finished(key, queued.id);
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    expect(done.creditsCharged).toBeGreaterThan(0);
    paths.set('video-succeeded-upstream-wait-by-webhook', queued.id);
    expect(fal.webhooks).toHaveLength(1);
    expect(fal.webhooks[0]!.status).toBe(200);
    // One look before parking and one by the run that collected it: no polling while it rendered.
    expect(fal.statusReads() - reads).toBeLessThanOrEqual(2);
    expect(fal.submits()).toBe(1);
    expect(await entries(queued.id)).toEqual({ hold: 1, charge: 1 });
    const file = await h.call('GET', new URL(done.outputUrl!).pathname + new URL(done.outputUrl!).search);
    expect(file.statusCode).toBe(200);
    const routed = (await h.call('GET', `/admin/v1/generations/${queued.id}/upstreams`, { key: ADMIN_TOKEN })).json<{
      upstream: string | null;
    }>();
    expect(routed.upstream).toBe('fal');
  });

  it('a forged, altered, stale, misaddressed or replayed webhook changes nothing; the genuine one completes the wait once', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video'] });
    const before = await credits(h, key);
    const queued = await video(key, 'kling', 'a storm up:ms=600000 up:nohook');
    const job = await parked(queued.id);
    const body = Buffer.from(
      JSON.stringify({
        request_id: job.job_id,
        gateway_request_id: job.job_id,
        status: 'OK',
        payload: { video: { url: `${fal.baseUrl}/files/${job.job_id}.webm` } },
      }),
    );
    const path = '/providers/fal/webhook?upstream=fal';
    const stranger = generateKeyPairSync('ed25519').privateKey;
    const refusals = [
      ['forged', post(path, signFalWebhook(stranger, job.job_id, 'u', now(), body), body)],
      ['altered', post(path, signFalWebhook(fal.privateKey, job.job_id, 'u', now(), Buffer.from('{}')), body)],
      ['stale', post(path, signFalWebhook(fal.privateKey, job.job_id, 'u', now() - 3_600, body), body)],
      ['from the future', post(path, signFalWebhook(fal.privateKey, job.job_id, 'u', now() + 3_600, body), body)],
      ['unsigned', post(path, {}, body)],
      [
        'for another upstream',
        post(
          '/providers/fal/webhook?upstream=fal-quiet',
          signFalWebhook(fal.privateKey, job.job_id, 'u', now(), body),
          body,
        ),
      ],
      [
        'through the other door',
        post(
          '/providers/replicate/webhook?upstream=fal',
          signFalWebhook(fal.privateKey, job.job_id, 'u', now(), body),
          body,
        ),
      ],
    ] as const;
    for (const [what, answer] of refusals) {
      const res = await answer;
      expect(res.status, what).toBe(400);
      expect(res.body.error?.type, what).toBe('invalid_request_error');
    }
    const row = await h.pool.query('SELECT ended_at FROM upstream_jobs WHERE job_id = $1 AND upstream = $2', [
      job.job_id,
      'fal',
    ]);
    expect(row.rows[0]).toEqual({ ended_at: null });
    expect(await statusOf(key, queued.id)).toBe('running');
    expect((await h.pool.query('SELECT count(*)::int AS n FROM upstream_callback_receipts')).rows[0].n).toBe(
      fal.webhooks.length,
    );

    fal.endJob(job.job_id);
    const genuine = signFalWebhook(fal.privateKey, job.job_id, 'u', now(), body);
    expect((await post(path, genuine, body)).body.outcome).toBe('completed');
    const done = await finished(key, queued.id);
    expect(done.status).toBe('succeeded');
    // The same webhook again (fal retries, or someone replays it): nothing changes.
    expect(await post(path, genuine, body)).toEqual({ status: 200, body: { received: true, outcome: 'replayed' } });
    await new Promise((r) => setTimeout(r, 300));
    expect(await entries(queued.id)).toEqual({ hold: 1, charge: 1 });
    expect((await credits(h, key)).balance).toBe(before.balance - done.creditsCharged);
  });

  it('a cancelled generation cancels its waiting upstream job and is charged nothing', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video'] });
    const queued = await video(key, 'kling', 'a long night up:ms=600000');
    const job = await parked(queued.id);
    expect((await h.call('POST', `/api/v1/generations/${queued.id}/cancel`, { key })).statusCode).toBe(200);
    const done = await finished(key, queued.id);
    expect(done).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'cancelled' } });
    paths.set('video-failed-cancelled-upstream-wait-while-waiting', queued.id);
    await eventually(async () => (fal.cancels().includes(job.job_id) ? true : undefined), 10_000);
    expect(await entries(queued.id)).toEqual({ hold: 1, release: 1 });
  });
});

describe('a Replicate video waits for its Standard Webhooks webhook', () => {
  it('is created with webhook and webhook_events_filter, and completed by the signed prediction', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video'] });
    const queued = await video(key, 'wan', 'a glacier up:ms=2500');
    const job = await parked(queued.id);
    expect(job.upstream).toBe('rep');
    await slotsFree();
    const create = rep.received.find((r) => r.method === 'POST' && r.body?.webhook !== undefined)!;
    expect(create.body).toMatchObject({
      webhook: `${api}/providers/replicate/webhook?upstream=rep`,
      webhook_events_filter: ['completed'],
    });
    const readsBefore = rep.reads();

    const done = await finished(key, queued.id);
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    expect(rep.webhooks).toHaveLength(1);
    expect(rep.webhooks[0]!.status).toBe(200);
    // Read once by the run that collected it, never polled while it ran.
    expect(rep.reads() - readsBefore).toBeLessThanOrEqual(1);
    expect(await entries(queued.id)).toEqual({ hold: 1, charge: 1 });

    // Replayed as it came, or signed with another secret: nothing changes.
    const sent = rep.webhooks[0]!;
    expect(await post('/providers/replicate/webhook?upstream=rep', sent.headers, sent.body)).toEqual({
      status: 200,
      body: { received: true, outcome: 'replayed' },
    });
    const forged = signStandardWebhook(
      `whsec_${Buffer.from('not the secret at all, no').toString('base64')}`,
      'msg_forged',
      now(),
      sent.body,
    );
    expect((await post('/providers/replicate/webhook?upstream=rep', forged, sent.body)).status).toBe(400);
    const stale = signStandardWebhook(rep.secret, 'msg_stale', now() - 3_600, sent.body);
    expect((await post('/providers/replicate/webhook?upstream=rep', stale, sent.body)).status).toBe(400);
    expect(await entries(queued.id)).toEqual({ hold: 1, charge: 1 });
  });
});

describe('a webhook that never comes', () => {
  it('is covered by the slow poll: the waiting run is found ended at the next look and collected', async () => {
    const { key } = await h.account({ credits: 500, scopes: ['video'] });
    const started = Date.now();
    const queued = await video(key, 'seedance-lite', 'a quiet field up:ms=2000 up:nohook');
    await parked(queued.id);
    await slotsFree();
    const done = await finished(key, queued.id);
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    expect(falQuiet.webhooks).toHaveLength(0);
    paths.set('video-succeeded-upstream-wait-by-slow-poll', queued.id);
    // Found by a look after the job ended: the first poll period past its 2 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(falQuiet.statusReads()).toBeGreaterThanOrEqual(2);
    expect(falQuiet.submits()).toBe(1);
    expect(await entries(queued.id)).toEqual({ hold: 1, charge: 1 });
  });
});

describe('determinism', () => {
  it('the waited-for run replays from its history with the upstream-wait patch', async () => {
    const ids = (
      await h.pool.query<{ id: string }>(
        "SELECT id FROM generations WHERE kind = 'video' AND status IN ('succeeded', 'failed')",
      )
    ).rows.map((r) => r.id);
    expect(ids.length).toBeGreaterThan(0);
    const histories = await Promise.all(
      ids.map(async (workflowId) => ({
        workflowId,
        history: await h.client.workflow.getHandle(workflowId).fetchHistory(),
      })),
    );
    for (const { history } of histories) {
      const patches = (history.events ?? []).flatMap((e) => {
        const marker = e.markerRecordedEventAttributes;
        const data =
          marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0]?.data : undefined;
        return data ? [(JSON.parse(Buffer.from(data).toString('utf8')) as { id: string }).id] : [];
      });
      // The upstream wait's own patch is retired; the one marker is the first look for a slot in place.
      expect(patches).toEqual(['video-slot-in-place']);
    }
    // RECORD_HISTORIES=1 adds these paths to the fixtures test/unit/workflows/replay-fixtures.test.ts replays.
    if (process.env.RECORD_HISTORIES === '1') await recordFixtures();
    const bundle = { code: await readFile(inject('workflowBundlePath'), 'utf8') };
    for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, histories))
      expect(r.error, r.workflowId).toBeUndefined();
  });
});
