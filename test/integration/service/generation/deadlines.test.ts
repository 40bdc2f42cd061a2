import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credits, generate, untilFinished } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

/**
 * Deadlines chosen by the client: `Cancel-After` (seconds or a duration) or the
 * body's `deadline_seconds` on every generate endpoint. A job past it fails `timeout` and its hold
 * is released: nothing is charged, whether it was running or still waiting for a video slot.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

interface GroupAGeneration {
  id: string;
  status: string;
  creditsCharged: number;
  error: { code: string; retryable: boolean } | null;
}

const v1 = async (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const res = await h.call('POST', '/api/v1/generate', { key, body, headers });
  return {
    status: res.statusCode,
    body: res.json<GroupAGeneration & { error: { type: string; code: number; message: string } }>(),
  };
};
const groupAGet = async (key: string, id: string) =>
  (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<GroupAGeneration>();
const finished = (key: string, id: string) =>
  eventually(
    async () => {
      const g = await groupAGet(key, id);
      return g.status === 'succeeded' || g.status === 'failed' ? g : undefined;
    },
    30_000,
    200,
  );

describe('a deadline the client chose', () => {
  it('a 10-second job with Cancel-After: 2 fails timeout while running: the provider is stopped, nothing charged', async () => {
    const { key } = await h.account({ credits: 200 });
    const before = await credits(h, key);
    const r = await v1(
      key,
      { kind: 'video', model: 'kling', prompt: 'a slow tide sim:delay=10000', seconds: 5 },
      { 'cancel-after': '2' },
    );
    expect(r.status).toBe(202);
    const g = await finished(key, r.body.id);
    // Left to run, the job would have succeeded: failing `timeout` is the deadline stopping it.
    expect(g).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'timeout', retryable: true } });
    expect(await credits(h, key)).toMatchObject({ balance: before.balance, holdsActive: 0 });
    // The hold was released, not settled: the ledger has no charge for it.
    const entries = await h.pool.query<{ kind: string }>(
      `SELECT entry AS kind FROM ledger_entries WHERE generation_id = $1 ORDER BY id`,
      [r.body.id],
    );
    expect(entries.rows.map((e) => e.kind)).not.toContain('charge');
  });

  it('a video still waiting for one of the five slots fails timeout at its deadline and was never charged', async () => {
    const { key } = await h.account({ credits: 2_000 });
    const blockers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        v1(key, { kind: 'video', model: 'kling', prompt: `blocker ${i} sim:delay=20000`, seconds: 5 }),
      ),
    );
    await eventually(async () => {
      const r = await h.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM generations WHERE id = ANY($1::text[]) AND status = 'running'`,
        [blockers.map((b) => b.body.id)],
      );
      return Number(r.rows[0]!.n) === 5 ? true : undefined;
    });
    const before = await credits(h, key);
    // deadline_seconds in the body; the duration form in the header is longer, so the body's counts.
    const waiting = await v1(
      key,
      { kind: 'video', model: 'kling', prompt: 'behind the others', seconds: 5, deadline_seconds: 2 },
      { 'cancel-after': '5m' },
    );
    expect(waiting.status).toBe(202);
    const g = await finished(key, waiting.body.id);
    expect(g).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'timeout' } });
    const row = await h.pool.query<{ started_at: Date | null }>(`SELECT started_at FROM generations WHERE id = $1`, [
      waiting.body.id,
    ]);
    expect(row.rows[0]!.started_at).toBeNull();
    // Only the blockers' holds are left.
    expect((await credits(h, key)).holdsActive).toBe(before.holdsActive);
    await Promise.all(blockers.map((b) => h.call('POST', `/api/v1/generations/${b.body.id}/cancel`, { key })));
  });

  it('group C takes the header too, and a deadline longer than the job changes nothing', async () => {
    const { key } = await h.account({ credits: 200 });
    const quick = await generate(
      h,
      key,
      { kind: 'video', model: 'kling', prompt: 'a quick one sim:delay=300', seconds: 5 },
      { 'cancel-after': '1h' },
    );
    expect(quick.status).toBe(200);
    expect(await untilFinished(h, key, quick.body.generation.id)).toMatchObject({ status: 'succeeded' });
    const slow = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'a slow one sim:delay=10000',
      seconds: 5,
      deadlineSeconds: 1.5,
    });
    expect(await untilFinished(h, key, slow.body.generation.id)).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'timeout' },
    });
  });

  it('a bad deadline is a 400 in each door’s shape, before anything is held', async () => {
    const { key } = await h.account({ credits: 200 });
    const before = await credits(h, key);
    const video = { kind: 'video', model: 'kling', prompt: 'never run', seconds: 5 };
    for (const value of ['soon', '0', '-3', '5 minutes', '', '30d']) {
      const a = await v1(key, video, { 'cancel-after': value });
      expect(a.status, value).toBe(400);
      expect(a.body.error).toMatchObject({ code: 400, message: expect.stringMatching(/Cancel-After/) });
    }
    expect((await v1(key, { ...video, deadline_seconds: 0 })).status).toBe(400);
    expect((await v1(key, { ...video, deadline_seconds: 'soon' })).status).toBe(400);
    const c = await generate(h, key, { ...video, deadlineSeconds: -1 });
    expect(c.status).toBe(400);
    expect(c.body.error).toMatchObject({ code: 400, type: expect.any(String) });
    const b = await h.call('POST', '/v1/video/generations', {
      key,
      body: { model: 'kling-2.1-pro', prompt: 'never run', deadline_seconds: 0 },
    });
    expect(b.statusCode).toBe(400);
    expect(b.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 400 } });
    const bh = await h.call('POST', '/v1/videos', {
      key,
      body: { prompt: 'never run' },
      headers: { 'cancel-after': 'later' },
    });
    expect(bh.statusCode).toBe(400);
    expect(bh.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 400 } });
    expect(await credits(h, key)).toMatchObject({ balance: before.balance, holdsActive: 0 });
  });
});
