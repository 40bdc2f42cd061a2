import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit } from '../../../../core/ledger';
import { newId } from '../../../../core/ids';
import { freePort } from '../../../../runtime/process';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { credits, generate, untilFinished } from '../../../support/api';

/**
 * The API admits a generation itself: one PostgreSQL transaction places the hold, then the
 * workflow is started without waiting for any worker (before the answer when the client waits for
 * the result, right after it otherwise). These tests hold it to what that promises.
 */
let h: Harness;
beforeAll(async () => {
  // No worker at first: admission must not need one.
  h = await startHarness({ worker: false, syncWaitMs: 300 });
});
afterAll(async () => {
  await h?.close();
});

describe('admission by the API', () => {
  it('accepts and holds without any worker; the jobs run once a worker polls', async () => {
    const { key } = await h.account({ credits: 100 });
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a harbour' });
    expect(video.status).toBe(200);
    expect(video.body.generation).toMatchObject({ status: 'queued', creditsCharged: 0 });
    // An image waits for its result only up to the bound, then answers its current state: admitted
    // running (it waits for no slot), though no worker has picked it up yet.
    const image = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a quay' });
    expect(image.body.generation).toMatchObject({ status: 'running' });
    expect(await credits(h, key)).toMatchObject({ balance: 100 - 42.5 - 3, holdsActive: 45.5 });

    await h.startWorker();
    expect(await untilFinished(h, key, video.body.generation.id)).toMatchObject({
      status: 'succeeded',
      creditsCharged: 42.5,
    });
    expect(await untilFinished(h, key, image.body.generation.id)).toMatchObject({
      status: 'succeeded',
      creditsCharged: 3,
    });
    expect(await credits(h, key)).toMatchObject({ balance: 54.5, holdsActive: 0 });
  });

  it('answers 503 and charges nothing when Temporal cannot be reached: the hold goes back at once', async () => {
    const { key, accountId } = await h.account({ credits: 20 });
    // The same app on a Temporal address where nothing listens.
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, connectTimeout: 500 });
    const app = await productionApi(h, {
      client: new Client({ connection }),
    });
    let videoId: string;
    try {
      // An image is waited for, so its workflow must start before the answer: 503 if it cannot.
      const res = await app.inject({
        method: 'POST',
        url: '/api/generate',
        headers: { authorization: `Bearer ${key}` },
        payload: { kind: 'image', model: 'flux', prompt: 'a pier' },
      });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json()).toMatchObject({
        error: { type: 'server_error', code: 503, message: expect.stringMatching(/nothing was charged/) },
      });

      // A video answers `queued` once its hold is durable; the start follows the answer, and when
      // it fails the hold goes back the same way: the generation fails `not_started`, charging nothing.
      const video = await app.inject({
        method: 'POST',
        url: '/api/generate',
        headers: { authorization: `Bearer ${key}` },
        payload: { kind: 'video', model: 'seedance-lite', prompt: 'a pier' },
      });
      expect(video.statusCode).toBe(200);
      expect(video.json()).toMatchObject({ generation: { status: 'queued', creditsCharged: 0 } });
      videoId = video.json<{ generation: { id: string } }>().generation.id;
    } finally {
      // Closing waits for the starts still under way.
      await app.close();
      await connection.close();
    }
    expect(await credits(h, key)).toMatchObject({ balance: 20, holdsActive: 0 });
    const rows = await h.pool.query<{ id: string; kind: string; status: string; error: { code: string } }>(
      'SELECT id, kind, status, error FROM generations WHERE account_id = $1 ORDER BY id',
      [accountId],
    );
    expect(rows.rows).toEqual([
      {
        id: expect.any(String),
        kind: 'image',
        status: 'failed',
        error: expect.objectContaining({ code: 'not_started', retryable: true }),
      },
      {
        id: videoId,
        kind: 'video',
        status: 'failed',
        error: expect.objectContaining({ code: 'not_started', retryable: true }),
      },
    ]);
  });

  it("answers a queued video, before anything reads its row back, with the row's own creation time", async () => {
    const { key } = await h.account({ credits: 100 });
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'video', model: 'seedance-lite', prompt: 'a pier at dusk' },
    });
    expect(res.statusCode).toBe(202);
    const answered = res.json<{ id: string; status: string; createdAt: string }>();
    expect(answered.status).toBe('queued');
    const row = await h.pool.query<{ created_at: Date }>('SELECT created_at FROM generations WHERE id = $1', [
      answered.id,
    ]);
    expect(answered.createdAt).toBe(row.rows[0]!.created_at.toISOString());
  });

  it('releases, exactly once, the hold of a generation whose workflow never started', async () => {
    const { key, accountId, keyId } = await h.account({ credits: 50 });
    // As if the API process died right after its hold transaction, before starting the workflow.
    const id = newId('gen');
    await admit(h.pool, [
      {
        id,
        accountId,
        apiKeyId: keyId,
        kind: 'video',
        model: 'kling',
        params: { seconds: 5, resolution: '720p', aspect: '16:9', width: 320, height: 176 },
        internal: {},
        prompt: 'orphan',
        quoteMc: 42_500,
      },
    ]);
    expect(await credits(h, key)).toMatchObject({ balance: 7.5, holdsActive: 42.5 });

    // A cancel starts the missing workflow with the cancel already in it: it releases at once.
    const [first, second] = await Promise.all([
      h.call('POST', `/api/v1/generations/${id}/cancel`, { key }),
      h.call('POST', `/api/v1/generations/${id}/cancel`, { key }),
    ]);
    for (const res of [first, second]) {
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id, status: 'failed', error: { code: 'cancelled' }, creditsCharged: 0 });
    }
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
    const entries = await h.pool.query<{ entry: string }>(
      'SELECT entry FROM ledger_entries WHERE generation_id = $1 ORDER BY id',
      [id],
    );
    expect(entries.rows.map((r) => r.entry)).toEqual(['hold', 'release']);
    const runs = await eventually(async () => {
      const found = [];
      for await (const wf of h.client.workflow.list({ query: `WorkflowId = "${id}"` })) found.push(wf);
      return found.length > 0 ? found : undefined;
    });
    expect(runs).toHaveLength(1);
  });
});
