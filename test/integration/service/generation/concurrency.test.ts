import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { allFinished, credits, generate } from '../../../support/api';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** Samples the account's money while `work` runs, so a dip below zero in flight would be seen. */
async function watchAvailable<T>(
  accountId: string,
  work: Promise<T>,
): Promise<{ result: T; lowestAvailableMc: number; samples: number }> {
  let lowest = Number.POSITIVE_INFINITY;
  let samples = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const r = await h.pool.query<{ available: number }>(
        'SELECT balance_mc - held_mc AS available FROM accounts WHERE id = $1',
        [accountId],
      );
      lowest = Math.min(lowest, r.rows[0]!.available);
      samples++;
      await new Promise((res) => setTimeout(res, 5));
    }
  })();
  try {
    return { result: await work, lowestAvailableMc: lowest, samples };
  } finally {
    done = true;
    await sampler;
  }
}

describe('money under concurrency', () => {
  it('200 concurrent video submits against a balance that covers 37: exactly 37 admitted, never below zero', async () => {
    // kling 5 s at 720p = 42.5 credits; the balance covers 37 of them and a part of the 38th.
    const price = 42.5;
    const start = 37 * price + 40;
    const { key, accountId } = await h.account({ credits: start });

    const submits = Array.from({ length: 200 }, (_, i) =>
      generate(h, key, { kind: 'video', model: 'kling', prompt: `shot ${i} sim:delay=50` }),
    );
    const { result, lowestAvailableMc, samples } = await watchAvailable(accountId, Promise.all(submits));

    const admitted = result.filter((r) => r.status === 200);
    const refused = result.filter((r) => r.status === 402);
    expect(admitted).toHaveLength(37);
    expect(refused).toHaveLength(163);
    for (const r of refused) expect(r.body.error).toMatchObject({ type: 'insufficient_credits', required: price });
    expect(samples).toBeGreaterThan(0);
    expect(lowestAvailableMc).toBeGreaterThanOrEqual(0);

    const finished = await allFinished(
      h,
      key,
      admitted.map((r) => r.body.generation.id),
    );
    expect(finished.every((g) => g.status === 'succeeded' && g.creditsCharged === price)).toBe(true);
    expect(await credits(h, key)).toMatchObject({ balance: 40, holdsActive: 0 });

    // The ledger agrees with the balance: one hold and one charge per admitted generation, nothing else.
    const entries = await h.pool.query<{ entry: string; n: string; total: string }>(
      `SELECT entry, count(*) AS n, sum(amount_mc) AS total FROM ledger_entries WHERE account_id = $1 GROUP BY entry ORDER BY entry`,
      [accountId],
    );
    expect(entries.rows.map((r) => [r.entry, Number(r.n), Number(r.total)])).toEqual([
      ['charge', 37, 37 * 42_500],
      ['credit', 1, start * 1000],
      ['hold', 37, 37 * 42_500],
    ]);
  });

  it('100 concurrent chats with chatCap 5: exactly 5 free, the rest charged per reply', async () => {
    const { key } = await h.account({ credits: 1000, chatCap: 5 });
    // Admission is what races here; the replies are awaited afterwards, so a slow machine cannot fail it.
    const submitted = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        generate(h, key, { kind: 'chat', model: 'chat-sonnet', prompt: `question ${i}` }, { prefer: 'respond-async' }),
      ),
    );
    expect(submitted.filter((r) => r.status !== 200).map((r) => r.body)).toEqual([]);
    const replies = (
      await allFinished(
        h,
        key,
        submitted.map((r) => r.body.generation.id),
      )
    ).map((generation) => ({ body: { generation } }));
    expect(replies.filter((r) => r.body.generation.status !== 'succeeded').map((r) => r.body.generation)).toEqual([]);
    const free = replies.filter((r) => r.body.generation.creditsCharged === 0);
    const paid = replies.filter((r) => r.body.generation.creditsCharged === 2);
    expect(free).toHaveLength(5);
    expect(free.every((r) => r.body.generation.model === 'chat-haiku')).toBe(true);
    expect(paid).toHaveLength(95);
    expect(await credits(h, key)).toEqual({
      balance: 1000 - 95 * 2,
      holdsActive: 0,
      trial: { chatCap: 5, chatUsed: 5, chatLeft: 0 },
    });
  });
});

describe('video slots', () => {
  it('8 concurrent videos on one account: never more than 5 running, the rest wait in queued and run first in, first out', async () => {
    const { key, accountId } = await h.account({ credits: 1000 });
    const submitted = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: `clip ${i} sim:delay=1500` }),
      ),
    );
    expect(submitted.every((r) => r.status === 200)).toBe(true);
    const ids = submitted.map((r) => r.body.generation.id);

    let maxRunning = 0;
    let sawQueued = false;
    for (;;) {
      const r = await h.pool.query<{ status: string; n: string }>(
        'SELECT status, count(*) AS n FROM generations WHERE account_id = $1 GROUP BY status',
        [accountId],
      );
      const by = Object.fromEntries(r.rows.map((row) => [row.status, Number(row.n)]));
      maxRunning = Math.max(maxRunning, by.running ?? 0);
      if ((by.queued ?? 0) > 0 && (by.running ?? 0) === 5) sawQueued = true;
      if ((by.succeeded ?? 0) + (by.failed ?? 0) === 8) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    expect(maxRunning).toBe(5);
    expect(sawQueued).toBe(true);

    // From the recorded run intervals too: at no instant were more than 5 running.
    const rows = (
      await h.pool.query<{ id: string; started_at: Date; finished_at: Date; status: string }>(
        'SELECT id, started_at, finished_at, status FROM generations WHERE account_id = $1 ORDER BY id',
        [accountId],
      )
    ).rows;
    expect(rows.every((g) => g.status === 'succeeded')).toBe(true);
    for (const g of rows) {
      const overlapping = rows.filter((o) => o.started_at <= g.started_at && o.finished_at > g.started_at);
      expect(overlapping.length).toBeLessThanOrEqual(5);
    }
    // The three that waited started in submission (id) order.
    const waited = [...rows]
      .sort((a, b) => a.started_at.getTime() - b.started_at.getTime())
      .slice(5)
      .map((g) => g.id);
    expect(waited).toEqual([...waited].sort());
    expect(new Set(ids)).toEqual(new Set(rows.map((g) => g.id)));
    expect(await credits(h, key)).toMatchObject({ balance: 1000 - 8 * 15, holdsActive: 0 });
  });
});
