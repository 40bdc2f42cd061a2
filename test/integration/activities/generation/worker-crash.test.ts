import { inject, afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, eventually } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generate, untilFinished } from '../../../support/api';
import { killAll, spawnEntry } from '../../../support/processes';
import type { Child } from '../../../support/processes';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await killAll();
  await h?.close();
});

function startWorker(): Child {
  return spawnEntry('runtime/worker-process.ts', {
    DATABASE_URL: h.databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: h.taskQueue,
    DATA_DIR: h.dataDir,
    LOG_LEVEL: 'warn',
  });
}

async function untilPolling(child: Child): Promise<void> {
  await eventually(async () => (child.output().includes('worker polling') ? true : undefined), 90_000, 100).catch(
    (err: unknown) => {
      throw new Error(`worker did not start: ${child.output()}`, { cause: err });
    },
  );
}

describe('a worker killed mid-job', () => {
  it('is replaced, the job ends, and it is charged exactly once', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const first = startWorker();
    await untilPolling(first);

    // kling 5 s 720p = 42.5 credits; the provider takes 4 s, long enough to be killed inside it.
    const { body } = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'a storm at sea sim:delay=4000' });
    const id = body.generation.id;
    await eventually(async () => {
      const r = await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id]);
      return r.rows[0]?.status === 'running' ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 1000));
    first.proc.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 42.5 });

    const second = startWorker();
    await untilPolling(second);
    const done = await untilFinished(h, key, id, 90_000);
    expect(done).toMatchObject({ status: 'succeeded', creditsCharged: 42.5 });
    expect(await credits(h, key)).toMatchObject({ balance: 57.5, holdsActive: 0 });

    const ledger = await h.pool.query<{ entry: string; amount_mc: number }>(
      'SELECT entry, amount_mc FROM ledger_entries WHERE generation_id = $1 ORDER BY id',
      [id],
    );
    expect(ledger.rows).toEqual([
      { entry: 'hold', amount_mc: 42_500 },
      { entry: 'charge', amount_mc: 42_500 },
    ]);
    const account = await h.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM ledger_entries WHERE account_id = $1 AND entry = 'charge'",
      [accountId],
    );
    expect(Number(account.rows[0]!.n)).toBe(1);

    // Temporal's own record shows the provider call really was cut off and run again.
    const history = await h.client.workflow.getHandle(id).fetchHistory();
    const attempts = (history.events ?? [])
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
    expect(Math.max(...attempts)).toBeGreaterThanOrEqual(2);

    second.proc.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
