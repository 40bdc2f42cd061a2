/**
 * A video first looks for one of its account's slots in place, inside its workflow task; one that
 * finds none waits holding no worker activity slot (benchmark finding 7): each look claims or parks
 * its task token in PostgreSQL, and whoever frees a slot claims it
 * for the oldest queued video and completes that video's wait. Against a workflow worker whose
 * activity slots are far fewer than the videos waiting, first in first out per account, each video
 * charged once; a parked waiter cancelled never runs and costs nothing; a wake that finds the
 * waiter's attempt already timed out (a stale token) is harmless, and the next look claims.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metrics } from '../../../../core/metrics';
import { newId } from '../../../../core/ids';
import { admit } from '../../../../core/ledger';
import { createGenerationGateway } from '../../../../service/generation/temporal-gateway';
import { allFinished, credits, generate, untilFinished, untilStarted } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { keepHistory } from '../../../support/histories';

/** The workflow worker's activity slots: far fewer than the videos that wait. */
const ACTIVITY_SLOTS = 3;
const VIDEO_SLOTS = 2;
/** seedance-lite's price per video, in credits and millicredits. */
const PRICE = 15;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ videoConcurrency: VIDEO_SLOTS, activitySlots: ACTIVITY_SLOTS });
});
afterAll(async () => {
  await h?.close();
});

const statusOf = async (id: string) =>
  (await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id])).rows[0]?.status;
/** The token a waiting video parked, once it has parked. */
const parkedToken = (id: string) =>
  eventually(
    async () =>
      (
        await h.pool.query<{ task_token: Buffer }>('SELECT task_token FROM video_slot_waits WHERE generation_id = $1', [
          id,
        ])
      ).rows[0]?.task_token,
    20_000,
    50,
  );
const charges = async (ids: string[]) =>
  (
    await h.pool.query<{ generation_id: string; n: number }>(
      `SELECT generation_id, count(*)::int AS n FROM ledger_entries WHERE entry = 'charge' AND generation_id = ANY($1::text[]) GROUP BY generation_id`,
      [ids],
    )
  ).rows;
const wakes = async (outcome: string) =>
  (await metrics.videoSlotWakes.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
/** Videos that take every slot of the account, running for `ms`. */
async function occupySlots(key: string, ms: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < VIDEO_SLOTS; i++)
    ids.push(
      (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: `busy ${i} sim:delay=${ms}` })).body
        .generation.id,
    );
  await eventually(async () =>
    (await Promise.all(ids.map(statusOf))).every((s) => s === 'running') ? true : undefined,
  );
  return ids;
}
/** Paths of the parked wait, by the fixture name their history is kept under. */
const paths = new Map<string, string>();

describe('videos waiting for their account slots', () => {
  it('all run, first in first out, each charged once, when younger waits start before older ones and outnumber the activity slots', async () => {
    const { accountId, key } = await h.account({ credits: 1000, scopes: ['video'] });
    const base = Date.now();
    const videos = Array.from({ length: 4 * ACTIVITY_SLOTS }, (_, i) => ({
      id: newId('gen', base + i),
      accountId,
      apiKeyId: null,
      kind: 'video' as const,
      model: 'seedance-lite',
      prompt: `sim:delay=300 convoy ${i}`,
      params: {},
      internal: {},
      quoteMc: PRICE * 1000,
    }));
    const admitted = await admit(h.pool, videos);
    expect(admitted.outcome).toBe('admitted');
    // Under load the workflows of younger videos may reach their wait first (the benchmark's
    // convoy): here they are started youngest first. A wait that held its activity slot would
    // leave the oldest, the only one allowed to claim, with none.
    const gateway = createGenerationGateway({ client: h.client, taskQueue: h.taskQueue });
    for (const { id, ...generation } of [...videos].reverse()) {
      await gateway.start({ ...generation, generationId: id, admitted: { free: false, model: generation.model } });
    }
    const ids = videos.map((v) => v.id);
    const done = await allFinished(h, key, ids, 60_000);
    expect(done.map((g) => g.status)).toEqual(ids.map(() => 'succeeded'));

    const started = await h.pool.query<{ id: string }>(
      'SELECT id FROM generations WHERE id = ANY($1::text[]) ORDER BY started_at, id',
      [ids],
    );
    expect(started.rows.map((r) => r.id)).toEqual(ids);
    expect(await charges(ids)).toEqual(expect.arrayContaining(ids.map((id) => ({ generation_id: id, n: 1 }))));
    expect(await credits(h, key)).toMatchObject({ balance: 1000 - ids.length * PRICE, holdsActive: 0 });
    expect((await h.pool.query('SELECT 1 FROM video_slot_waits WHERE account_id = $1', [accountId])).rowCount).toBe(0);
    // The youngest parked first and was woken by the slot its elder freed.
    paths.set('video-succeeded-slot-park-woken', ids.at(-1)!);
  });

  it('a parked waiter cancelled is released, charged nothing and never runs; the one behind it is not held up', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const busy = await occupySlots(key, 6000);
    const waiting = (await generate(h, key, { kind: 'video', model: 'kling', prompt: 'parked then cancelled' })).body
      .generation.id;
    const behind = (
      await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'behind it sim:delay=100' })
    ).body.generation.id;
    await parkedToken(waiting);
    await parkedToken(behind);

    await untilStarted(h, waiting);
    const cancelled = await h.call('POST', `/api/v1/generations/${waiting}/cancel`, { key });
    expect(cancelled.statusCode).toBe(200);
    expect(await untilFinished(h, key, waiting)).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'cancelled' },
    });
    const record = await h.pool.query<{ started_at: Date | null }>('SELECT started_at FROM generations WHERE id = $1', [
      waiting,
    ]);
    expect(record.rows[0]?.started_at).toBeNull();

    for (const id of [...busy, behind]) expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded' });
    expect(await charges([waiting])).toEqual([]);
    expect(await credits(h, key)).toMatchObject({ balance: 1000 - (busy.length + 1) * PRICE, holdsActive: 0 });
    // Its wait's row went with the wake that followed.
    expect((await h.pool.query('SELECT 1 FROM video_slot_waits WHERE generation_id = $1', [waiting])).rowCount).toBe(0);
    paths.set('video-failed-cancelled-while-parked', waiting);
  });

  it('a waiter whose parked token went stale (its attempt timed out) is claimed all the same and runs', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const busy = await occupySlots(key, 60000);
    const waiter = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'stale sim:delay=100' }))
      .body.generation.id;
    const first = await parkedToken(waiter);
    // The attempt times out after the safety poll period and the next one parks its own token.
    await eventually(
      async () => {
        const now = await parkedToken(waiter);
        return now.equals(first) ? undefined : true;
      },
      40_000,
      200,
    );
    // As a wake that read the row just before that timeout would find it: the first attempt's token.
    await h.pool.query('UPDATE video_slot_waits SET task_token = $2 WHERE generation_id = $1', [waiter, first]);
    const stale = await wakes('stale');

    await untilStarted(h, busy[0]!);
    expect((await h.call('POST', `/api/v1/generations/${busy[0]}/cancel`, { key })).statusCode).toBe(200);
    // Freed: the slot is claimed for the waiter, and completing the stale token finds no attempt.
    await eventually(async () => ((await statusOf(waiter)) === 'running' ? true : undefined), 10_000, 50);
    await eventually(async () => ((await wakes('stale')) === stale + 1 ? true : undefined), 10_000, 50);
    // Its attempt then parked is not woken; its next look, one poll period later at most, finds it running.
    expect(await untilFinished(h, key, waiter, 40_000)).toMatchObject({ status: 'succeeded', creditsCharged: PRICE });
    expect(await charges([waiter])).toEqual([{ generation_id: waiter, n: 1 }]);

    expect((await h.call('POST', `/api/v1/generations/${busy[1]}/cancel`, { key })).statusCode).toBe(200);
    expect(await credits(h, key)).toMatchObject({ balance: 1000 - PRICE, holdsActive: 0 });
    paths.set('video-succeeded-slot-park-stale-token', waiter);
  }, 120_000);

  it('a video whose account has a slot free claims it in its first workflow task, with no slot activity', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const id = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'free slot sim:delay=100' }))
      .body.generation.id;
    expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded', creditsCharged: PRICE });
    expect(await charges([id])).toEqual([{ generation_id: id, n: 1 }]);
    // The record is settled from within the last workflow task: its history is whole once the workflow has closed.
    await h.client.workflow.getHandle(id).result();
    const events = (await h.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const activities = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(activities).not.toContain('claimVideoSlot');
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(2);
    const parked = await h.client.workflow.getHandle(paths.get('video-failed-cancelled-while-parked')!).fetchHistory();
    expect(
      (parked.events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
    ).toContain('claimVideoSlot');
  });

  it('records the paths, with no replay-only patch marker left in them', async () => {
    expect([...paths.keys()]).toHaveLength(3);
    for (const id of paths.values()) {
      const history = await h.client.workflow.getHandle(id).fetchHistory();
      const markers = (history.events ?? [])
        .flatMap((e) => e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? [])
        .map((p) => JSON.parse(Buffer.from(p.data!).toString('utf8')) as { id: string });
      // The one marker: the first look in place, whose patch keeps older videos replaying.
      expect(markers.map((m) => m.id)).toEqual(['video-slot-in-place']);
    }
    // RECORD_HISTORIES=1 adds these paths to the fixtures test/unit/workflows/replay-fixtures.test.ts replays.
    if (process.env.RECORD_HISTORIES === '1') for (const [name, id] of paths) await keepHistory(id, name);
  });
});
