import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventSource } from 'eventsource';
import { generate } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { productionApi } from '../../../support/production-api';
import { readEvents as readSse } from '../../../support/sse';
import type { ReadOptions } from '../../../support/sse';

/**
 * Live streams of generations (GET /api/v1/generations/:id/events, GET /api/v1/events), over real
 * HTTP with the fetch of Node: each event comes from the ledger's commit notices, so a change made
 * through one API process reaches a stream open on another.
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ listen: true, syncWaitMs: 30_000 });
});
afterAll(async () => {
  await h?.close();
});

interface Received {
  id?: string;
  event: string;
  data: { id: string; status: string; creditsCharged?: number };
}

const readEvents = (url: string, key: string, opts: ReadOptions<Received['data']> = {}) =>
  readSse<Received['data']>(url, key, opts);

describe('one generation, live', () => {
  it('streams each status the generation enters, the final one as `done`, then closes; an id resumes after it', async () => {
    const { key } = await h.account({ credits: 100 });
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a harbour sim:delay=1500' });
    const id = video.body.generation.id;
    const stream = await readEvents(`${h.baseUrl}/api/v1/generations/${id}/events`, key);
    expect(stream.status).toBe(200);
    expect(stream.type).toContain('text/event-stream');
    expect(stream.closed).toBe(true);
    const last = stream.events.at(-1)!;
    expect(last).toMatchObject({ event: 'done', id: '3', data: { id, status: 'succeeded', creditsCharged: 42.5 } });
    // Every status at most once, in order, the in-flight ones as `status`.
    // Progress and a video's first-frame preview come between them while it runs; the statuses are what this checks.
    const changes = stream.events.filter((e) => e.event !== 'progress' && e.event !== 'preview');
    for (const e of stream.events.filter((x) => x.event === 'preview')) expect(e.data.status).toBe('running');
    const statuses = changes.map((e) => e.data.status);
    expect(['queued,running,succeeded', 'running,succeeded', 'succeeded']).toContain(statuses.join(','));
    expect(changes.slice(0, -1).every((e) => e.event === 'status')).toBe(true);

    // Resumed after `running`: only the end. Resumed after the end: nothing, and closed.
    expect(
      (await readEvents(`${h.baseUrl}/api/v1/generations/${id}/events`, key, { lastEventId: '2' })).events.map(
        (e) => e.event,
      ),
    ).toEqual(['done']);
    const after = await readEvents(`${h.baseUrl}/api/v1/generations/${id}/events`, key, { lastEventId: '3' });
    expect({ events: after.events, closed: after.closed }).toEqual({ events: [], closed: true });
  });

  it('the `eventsource` client (what browsers implement): every event once, in order, and its reconnect with Last-Event-ID brings nothing again', async () => {
    const { key } = await h.account({ credits: 100 });
    const video = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a lighthouse sim:delay=1500' });
    const id = video.body.generation.id;
    const received: { id: string; type: string; status: string }[] = [];
    const resumedFrom: (string | null)[] = [];
    const source = new EventSource(`${h.baseUrl}/api/v1/generations/${id}/events`, {
      fetch: (input, init) => {
        const headers = new Headers(init.headers);
        resumedFrom.push(headers.get('last-event-id'));
        headers.set('authorization', `Bearer ${key}`);
        return fetch(input, { ...init, headers });
      },
    });
    const record = (type: string) => (e: MessageEvent) =>
      void received.push({
        id: e.lastEventId,
        type,
        status: (JSON.parse(String(e.data)) as { status: string }).status,
      });
    for (const type of ['status', 'progress', 'preview', 'done']) source.addEventListener(type, record(type));
    try {
      // The stream closes after `done`; the client reconnects by itself, saying where it was.
      await eventually(
        async () => (received.some((e) => e.type === 'done') && resumedFrom.length >= 2 ? true : undefined),
        30_000,
      );
    } finally {
      source.close();
    }
    expect(received.at(-1)).toMatchObject({ type: 'done', status: 'succeeded' });
    expect(resumedFrom[1]).toBe(received.at(-1)!.id);
    // Ids rise with every event, the preview's included (`2.401` after `2.400`), and nothing came
    // twice, the reconnect included.
    const ordered = received.map((e) => Number(e.id));
    expect(ordered, JSON.stringify(received)).toEqual([...new Set(ordered)].sort((a, b) => a - b));
    expect(received.filter((e) => e.type === 'done')).toHaveLength(1);
    const order = ['queued', 'running', 'succeeded'];
    const statuses = received.map((e) => order.indexOf(e.status));
    expect(statuses).toEqual([...statuses].sort((a, b) => a - b));
  });

  it("another account's generation is not found, in group A's error shape, before anything streams", async () => {
    const owner = await h.account({ credits: 10 });
    const other = await h.account({ credits: 10 });
    const image = await generate(h, owner.key, { kind: 'image', model: 'flux', prompt: 'a kite' });
    const res = await readEvents(`${h.baseUrl}/api/v1/generations/${image.body.generation.id}/events`, other.key);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body!)).toMatchObject({ error: { type: 'not_found', code: 404 } });
  });
});

describe('the account, live', () => {
  let second: FastifyInstance;
  let secondUrl: string;
  beforeAll(async () => {
    second = await productionApi(h, {
      syncWaitMs: 20_000,
    });
    secondUrl = await second.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await second?.close();
  });

  it('a stream open on a second API process hears what the first one admits, runs and charges, by any door', async () => {
    const { key } = await h.account({ credits: 100 });
    const done = (events: Received[]) => events.filter((e) => e.event === 'done').length >= 2;
    const listening = readEvents(`${secondUrl}/api/v1/events`, key, { until: done });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const image = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a gull' });
    const chat = await h.call('POST', '/api/generate', { key, body: { kind: 'chat', prompt: 'hello sim:tokens=3' } });
    const stream = await listening;
    const ids = [image.body.generation.id, chat.json().generation.id];
    for (const id of ids) {
      const own: Received[] = stream.events.filter((e) => e.data.id === id);
      expect(own.at(-1), id).toMatchObject({ event: 'done', data: { status: 'succeeded' } });
      // A status event's id is the number of the change: they rise with every change.
      const changes = own.filter((e) => e.event === 'status' || e.event === 'done').map((e) => Number(e.id));
      expect(changes).toEqual([...new Set(changes)].sort((a, b) => a - b));
    }
  });

  it('`ids` limits the stream to those generations, each first as it is now; Last-Event-ID resumes with what changed since', async () => {
    const { key } = await h.account({ credits: 100 });
    const first = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'one' });
    const other = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'two' });
    const id = first.body.generation.id;
    // Every listed generation has ended: sent once, as it is, and the stream closes.
    const now = await readEvents(`${h.baseUrl}/api/v1/events?ids=${id}`, key, { ms: 5_000 });
    expect(now.closed).toBe(true);
    expect(now.events).toEqual([
      expect.objectContaining({ event: 'done', data: expect.objectContaining({ id, status: 'succeeded' }) }),
    ]);
    expect(now.events.some((e) => e.data.id === other.body.generation.id)).toBe(false);

    // The listed one was sent as it is now, with an id counted on from the account's latest change
    // (`<n>-1`): resuming after it brings exactly what changed since, not the listed one again.
    expect(now.events[0]!.id).toMatch(/^\d+-1$/);
    const third = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'three' });
    const resumed = await readEvents(`${h.baseUrl}/api/v1/events`, key, {
      lastEventId: now.events[0]!.id!,
      until: (e) => e.some((x) => x.data.id === third.body.generation.id && x.event === 'done'),
      ms: 10_000,
    });
    expect(new Set(resumed.events.map((e) => e.data.id))).toEqual(new Set([third.body.generation.id]));
  });
});
