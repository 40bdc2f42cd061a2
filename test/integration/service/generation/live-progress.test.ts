import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { readEvents as readSse } from '../../../support/sse';

/**
 * Long jobs people can watch: `progress`, `queuePosition`, `etaSeconds` and
 * `expectedAt` on the records, progress written by the provider step to its own table and heard
 * on the live streams, and durations measured per model and size.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ listen: true });
});
afterAll(async () => {
  await h?.close();
});

interface Live {
  id: string;
  status: string;
  progress: number;
  queuePosition: number | null;
  etaSeconds: number | null;
  expectedAt: string | null;
}
interface Received {
  id?: string;
  event: string;
  data: Live;
}

const v1 = async (key: string, body: Record<string, unknown>) =>
  (await h.call('POST', '/api/v1/generate', { key, body })).json<Live>();
const groupAGet = async (key: string, id: string) =>
  (await h.call('GET', `/api/v1/generations/${id}`, { key })).json<Live>();

/** Every event of a stream until it closes (test/support/sse.ts). */
async function readEvents(url: string, key: string, ms = 30_000): Promise<Received[]> {
  const stream = await readSse<Live>(url, key, { ms });
  expect(stream.status).toBe(200);
  return stream.events;
}

describe('progress', () => {
  it('group A over real HTTP: `event: progress` while the simulator steps through a video, never going back, then `done` at 100', async () => {
    const { key } = await h.account({ credits: 200 });
    const g = await v1(key, { kind: 'video', model: 'kling', prompt: 'a lighthouse sim:delay=4000', seconds: 5 });
    const events = await readEvents(`${h.baseUrl}/api/v1/generations/${g.id}/events`, key);
    const progress = events.filter((e) => e.event === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const e of progress) {
      expect(e.data).toMatchObject({ id: g.id, status: 'running', queuePosition: null });
      expect(e.data.progress).toBeGreaterThan(0);
      expect(e.data.progress).toBeLessThan(100);
      expect(e.data.etaSeconds).toBeGreaterThanOrEqual(1);
      expect(Date.parse(e.data.expectedAt!)).toBeGreaterThan(Date.now() - 60_000);
    }
    const seen = progress.map((e) => e.data.progress);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    // Event ids go on rising (a resumed stream is sent only what is newer).
    const ids = events.map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(events.at(-1)).toMatchObject({
      event: 'done',
      data: { status: 'succeeded', progress: 100, etaSeconds: null, expectedAt: null },
    });
  });

  it('the openai SDK sees progress on client.videos.retrieve rise while in_progress and 100 when completed', async () => {
    const { key } = await h.account({ credits: 200 });
    const client = new OpenAI({ apiKey: key, baseURL: `${h.baseUrl}/v1` });
    const created = await client.videos.create({
      model: 'kling-2.1-pro',
      prompt: 'waves sim:delay=4000',
      seconds: '4',
      size: '1280x720',
    });
    const seen: number[] = [];
    const done = await eventually(
      async () => {
        const v = await client.videos.retrieve(created.id);
        if (v.status === 'in_progress') seen.push(v.progress);
        return v.status === 'completed' ? v : undefined;
      },
      30_000,
      150,
    );
    expect(done.progress).toBe(100);
    expect(seen.some((p) => p > 0 && p < 100)).toBe(true);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('the progress a run recorded is its own table’s, and a succeeded run adds its duration to the model and size’s samples', async () => {
    const { key } = await h.account({ credits: 200 });
    const g = await v1(key, { kind: 'video', model: 'wan', prompt: 'a kite sim:delay=1500', seconds: 5 });
    await eventually(async () => ((await groupAGet(key, g.id)).status === 'succeeded' ? true : undefined));
    const rows = await h.pool.query<{ percent: number; source: string }>(
      `SELECT percent, source FROM generation_progress WHERE generation_id = $1`,
      [g.id],
    );
    expect(rows.rows[0]).toMatchObject({ source: 'provider' });
    const samples = await h.pool.query<{ samples: number[] }>(
      `SELECT samples FROM generation_durations WHERE model = 'wan'`,
    );
    expect(samples.rows.flatMap((r) => r.samples).length).toBeGreaterThanOrEqual(1);
  });
});

describe('queue position and ETA', () => {
  it('videos waiting for one of the five slots count 1, 2, 3 in order and move up as slots free; ETA comes from measured durations', async () => {
    const { key } = await h.account({ credits: 5_000 });
    // Three measured runs of this model and size: the median is the expected duration from now on.
    for (let i = 0; i < 3; i++) {
      const w = await v1(key, { kind: 'video', model: 'hailuo', prompt: `warm-up ${i} sim:delay=1000`, seconds: 6 });
      await eventually(async () => ((await groupAGet(key, w.id)).status === 'succeeded' ? true : undefined));
    }
    const blockers: Live[] = [];
    for (let i = 0; i < 5; i++)
      blockers.push(
        await v1(key, { kind: 'video', model: 'hailuo', prompt: `blocker ${i} sim:delay=30000`, seconds: 6 }),
      );
    await eventually(async () => {
      const r = await h.pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM generations WHERE id = ANY($1::text[]) AND status = 'running'`,
        [blockers.map((b) => b.id)],
      );
      return Number(r.rows[0]!.n) === 5 ? true : undefined;
    });
    const waiting: Live[] = [];
    for (let i = 0; i < 3; i++)
      waiting.push(
        await v1(key, { kind: 'video', model: 'hailuo', prompt: `waiting ${i} sim:delay=1000`, seconds: 6 }),
      );
    const positions = await Promise.all(waiting.map((w) => groupAGet(key, w.id)));
    expect(positions.map((p) => p.queuePosition)).toEqual([1, 2, 3]);
    expect(positions.map((p) => p.status)).toEqual(['queued', 'queued', 'queued']);
    expect(positions.every((p) => p.progress === 0)).toBe(true);
    // The first in line waits for its run and for a slot to free (a fifth of a run, five slots):
    // both the median this model and size measured, not the catalogue's default.
    const measured = await h.pool.query<{ median: number }>(
      `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) AS median
         FROM generation_durations d, unnest(d.samples) s WHERE d.model = 'hailuo' GROUP BY d.size`,
    );
    expect(measured.rows).toHaveLength(1);
    const expected = measured.rows[0]!.median;
    expect(positions[0]!.etaSeconds).toBe(Math.max(1, Math.round(expected + expected / 5)));
    expect(positions[2]!.etaSeconds).toBeGreaterThanOrEqual(positions[0]!.etaSeconds!);
    // Group C shows the same.
    const c = (await h.call('GET', `/api/generate/${waiting[1]!.id}`, { key })).json<{ generation: Live }>().generation;
    expect(c).toMatchObject({ queuePosition: 2, progress: 0 });

    // A slot frees: the next one runs, the others move up.
    await h.call('POST', `/api/v1/generations/${blockers[0]!.id}/cancel`, { key });
    await eventually(async () => ((await groupAGet(key, waiting[2]!.id)).queuePosition === 2 ? true : undefined));
    expect((await groupAGet(key, waiting[1]!.id)).queuePosition).toBe(1);
    for (const b of blockers.slice(1)) await h.call('POST', `/api/v1/generations/${b.id}/cancel`, { key });
    for (const w of waiting)
      await eventually(async () => ((await groupAGet(key, w.id)).status === 'succeeded' ? true : undefined));
  });
});

describe('preview before the end', () => {
  it('a running video has its first frame as thumbnailUrl, sent as `event: preview` before it ends; the end keeps it and adds the spritesheet', async () => {
    const { key } = await h.account({ credits: 200 });
    const g = await v1(key, { kind: 'video', model: 'kling', prompt: 'a red kite sim:delay=4000', seconds: 5 });
    type Shown = Live & { thumbnailUrl: string | null; spritesheetUrl: string | null };
    const events = await readEvents(`${h.baseUrl}/api/v1/generations/${g.id}/events`, key);
    const names = events.map((e) => e.event);
    const preview = events.find((e) => e.event === 'preview');
    expect(preview, names.join(',')).toBeDefined();
    expect(names.indexOf('preview')).toBeLessThan(names.indexOf('done'));
    const shown = preview!.data as Shown;
    expect(shown).toMatchObject({ id: g.id, status: 'running', spritesheetUrl: null });
    expect(shown.progress).toBeLessThan(100);
    expect(shown.thumbnailUrl).toMatch(/\/thumbnail\.jpg\?/);
    // Every event before it had no thumbnail yet; the record while running and at the end has the same one.
    for (const e of events.slice(0, names.indexOf('preview'))) expect((e.data as Shown).thumbnailUrl).toBeNull();
    const done = events.at(-1)!.data as Shown;
    expect(done.status).toBe('succeeded');
    expect(new URL(done.thumbnailUrl!).pathname).toBe(new URL(shown.thumbnailUrl!).pathname);
    expect(done.spritesheetUrl).toMatch(/\/spritesheet\.jpg\?/);
    const jpeg = await h.store.get(`${g.id}/thumbnail.jpg`);
    expect(jpeg?.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));

    // The account stream hears it too, from another generation started while it is open.
    const other = await v1(key, { kind: 'video', model: 'kling', prompt: 'a blue kite sim:delay=3000', seconds: 5 });
    const all = await readEvents(`${h.baseUrl}/api/v1/events?ids=${other.id}`, key);
    const heard = all.filter((e) => e.event === 'preview');
    expect(heard.length, all.map((e) => e.event).join(',')).toBeGreaterThanOrEqual(1);
    expect(heard[0]!.data).toMatchObject({
      id: other.id,
      status: 'running',
      thumbnailUrl: expect.stringMatching(/thumbnail\.jpg/),
    });
  });
});
