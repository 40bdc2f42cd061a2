import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tsToMs } from '@temporalio/common/lib/time';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, untilFinished } from '../../../support/api';

/**
 * An account's starts past what it can run (its room: the provider permits of one worker) take
 * their first workflow task later, one every gap; their workflows exist at once, hold their
 * credits and can be cancelled meanwhile. Another account's start is not put off by them.
 */
const ROOM = 2;
/** One start past the room every 4 s while none of the account's runs has ended. */
const GAP_MS = 4_000;
const ASYNC = { prefer: 'respond-async' };

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ providerConcurrency: ROOM, startPace: { room: ROOM, minPerSecond: 1000 / GAP_MS } });
});
afterAll(async () => {
  await h?.close();
});

async function submit(key: string, prompt: string): Promise<string> {
  const res = await h.call('POST', '/api/generate', {
    key,
    headers: ASYNC,
    body: { kind: 'image', model: 'flux', prompt },
  });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json<{ generation: { id: string } }>().generation.id;
}

/** How long the server put off the workflow's first task (0: none), and when it was started. */
async function startOf(id: string): Promise<{ backoffMs: number; startedAt: number; firstTaskAt: number }> {
  const history = await eventually(async () => {
    const events = (await h.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    return events.some((e) => e.workflowTaskScheduledEventAttributes) ? events : undefined;
  });
  const started = history[0]!;
  const firstTask = history.find((e) => e.workflowTaskScheduledEventAttributes)!;
  // A duration is a Timestamp-shaped message (seconds, nanos).
  const backoff = started.workflowExecutionStartedEventAttributes?.firstWorkflowTaskBackoff;
  return {
    backoffMs: backoff ? tsToMs(backoff) : 0,
    startedAt: tsToMs(started.eventTime),
    firstTaskAt: tsToMs(firstTask.eventTime),
  };
}

async function ledgerOf(ids: string[]): Promise<Record<string, string[]>> {
  const rows = await h.pool.query<{ generation_id: string; entry: string }>(
    'SELECT generation_id, entry FROM ledger_entries WHERE generation_id = ANY($1::text[]) ORDER BY id',
    [ids],
  );
  const by: Record<string, string[]> = Object.fromEntries(ids.map((id) => [id, []]));
  for (const r of rows.rows) by[r.generation_id]!.push(r.entry);
  return by;
}

describe('an account’s starts past its room', () => {
  it('are put off one gap apart, held and cancellable meanwhile, and another account’s start is not', async () => {
    const flood = await h.account({ credits: 100 });
    const lone = await h.account({ credits: 100 });
    const ids: string[] = [];
    for (const n of [1, 2, 3, 4]) ids.push(await submit(flood.key, `a slow kite ${n} sim:delay=1500`));
    const loneId = await submit(lone.key, 'a lone kite');

    // The last one is cancelled while its start is put off: the cancel's signal-with-start wakes it.
    const cancelled = await h.call('POST', `/api/v1/generations/${ids[3]}/cancel`, { key: flood.key });
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'failed', error: { code: 'cancelled' }, creditsCharged: 0 });

    const starts = await Promise.all(ids.map(startOf));
    expect(starts.slice(0, ROOM).map((s) => s.backoffMs)).toEqual([0, 0]);
    expect(starts[2]!.backoffMs).toBeGreaterThan(GAP_MS / 2);
    expect(starts[3]!.backoffMs).toBeGreaterThan(starts[2]!.backoffMs);
    // Woken by the cancel long before its delay was up.
    expect(starts[3]!.firstTaskAt - starts[3]!.startedAt).toBeLessThan(starts[3]!.backoffMs);
    expect((await startOf(loneId)).backoffMs).toBe(0);

    // Every other one succeeds (the put-off one after its delay), each charged once; the cancelled one is released.
    for (const id of [...ids.slice(0, 3), loneId]) {
      const key = id === loneId ? lone.key : flood.key;
      expect(await untilFinished(h, key, id, 30_000)).toMatchObject({ status: 'succeeded' });
    }
    expect(starts[2]!.firstTaskAt - starts[2]!.startedAt).toBeGreaterThanOrEqual(starts[2]!.backoffMs - 50);
    expect(await ledgerOf(ids)).toEqual({
      [ids[0]!]: ['hold', 'charge'],
      [ids[1]!]: ['hold', 'charge'],
      [ids[2]!]: ['hold', 'charge'],
      [ids[3]!]: ['hold', 'release'],
    });
    expect(await credits(h, flood.key)).toMatchObject({ holdsActive: 0 });
  });
});
