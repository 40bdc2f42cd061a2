/**
 * A batch under stress: its worker killed while lines run (every line exactly once, charged once),
 * its workflow terminated from the Temporal UI (the reconciler starts it again, it carries on), its
 * completion window ending (lines stopped and released, the batch expired), and another account's
 * single request while a large batch fills the provider's slots (served before the batch is done).
 */
import { inject, afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchCompleted, BatchFailed, BatchId, BatchLines, BatchStatus } from '../../../../core/search-attributes';
import { newId } from '../../../../core/ids';
import type { ReconcileReport } from '../../../../activities/generation/reconcile';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { killAll, spawnEntry } from '../../../support/processes';
import type { Child } from '../../../support/processes';

const chatLine = (i: number, content: string) => ({
  custom_id: `c${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: 'claude-haiku', messages: [{ role: 'user', content }], max_tokens: 20 },
});
const imageLine = (i: number, prompt: string) => ({
  custom_id: `i${i}`,
  method: 'POST',
  url: '/v1/images/generations',
  body: { model: 'flux', prompt },
});

async function makeBatch(h: Harness, key: string, lines: unknown[], endpoint = '/v1/chat/completions') {
  const boundary = 'b0undary';
  const text = lines.map((l) => JSON.stringify(l)).join('\n');
  const payload =
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  const file = await h.app.inject({
    method: 'POST',
    url: '/v1/files',
    headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
  expect(file.statusCode, file.body).toBe(200);
  const made = await h.call('POST', '/v1/batches', {
    key,
    body: { input_file_id: file.json<{ id: string }>().id, endpoint, completion_window: '24h' },
  });
  expect(made.statusCode, made.body).toBe(200);
  return made.json<{ id: string }>().id;
}

/** One pass of the reconciler, as its schedule runs it, looking at every hold and batch however young. */
const reconcileNow = async (h: Harness) =>
  (await h.client.workflow.execute('reconcile', {
    taskQueue: h.taskQueue,
    workflowId: `reconcile-${newId('gen')}`,
    args: [{ graceMs: 0 }],
  })) as ReconcileReport;

interface Batch {
  status: string;
  request_counts: { total: number; completed: number; failed: number };
  error_file_id: string | null;
}
const batchOf = async (h: Harness, key: string, id: string) =>
  (await h.call('GET', `/v1/batches/${id}`, { key })).json<Batch>();
const untilStatus = (h: Harness, key: string, id: string, status: string, timeoutMs = 90_000) =>
  eventually(
    async () => {
      const b = await batchOf(h, key, id);
      return b.status === status ? b : undefined;
    },
    timeoutMs,
    300,
  );

/** What the ledger and the lines say of a finished batch: every line once, charged once, nothing held. */
async function expectSettledOnce(h: Harness, batchId: string, lines: number) {
  const gens = await h.pool.query<{ batch_line: number; n: number; charges: number; holds: number }>(
    `SELECT g.batch_line, count(DISTINCT g.id)::int AS n,
            count(e.id) FILTER (WHERE e.entry = 'charge')::int AS charges,
            count(h.generation_id) FILTER (WHERE h.state = 'held')::int AS holds
       FROM generations g LEFT JOIN ledger_entries e ON e.generation_id = g.id LEFT JOIN holds h ON h.generation_id = g.id
      WHERE g.batch_id = $1 GROUP BY g.batch_line ORDER BY g.batch_line`,
    [batchId],
  );
  expect(gens.rows).toHaveLength(lines);
  for (const row of gens.rows) expect(row, `line ${row.batch_line}`).toMatchObject({ n: 1, charges: 1, holds: 0 });
  const b = await h.pool.query<{ held_mc: number; holds: number }>(
    `SELECT held_mc, (SELECT count(*)::int FROM ledger_entries WHERE batch_id = $1 AND entry = 'hold') AS holds
       FROM batches WHERE id = $1`,
    [batchId],
  );
  expect(b.rows[0]).toEqual({ held_mc: 0, holds: 1 });
}

describe('a worker killed while a batch runs', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ worker: false });
  });
  afterAll(async () => {
    await killAll();
    await h?.close();
  });

  const startWorker = (): Child =>
    spawnEntry('runtime/worker-process.ts', {
      DATABASE_URL: h.databaseUrl,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: h.taskQueue,
      DATA_DIR: h.dataDir,
      LOG_LEVEL: 'warn',
      BATCH_LINES_IN_FLIGHT: '3',
    });
  const untilPolling = (child: Child) =>
    eventually(async () => (child.output().includes('worker polling') ? true : undefined), 90_000, 100).catch(
      (err: unknown) => {
        throw new Error(`worker did not start: ${child.output()}`, { cause: err });
      },
    );

  it('runs every line exactly once and charges each once', async () => {
    const { key } = await h.account({ credits: 100 });
    const first = startWorker();
    await untilPolling(first);
    const id = await makeBatch(
      h,
      key,
      Array.from({ length: 12 }, (_, i) => chatLine(i + 1, `line ${i + 1} sim:delay=700 sim:tokens=2`)),
    );
    await eventually(
      async () => ((await batchOf(h, key, id)).request_counts.completed >= 3 ? true : undefined),
      60_000,
      200,
    );
    first.proc.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect((await batchOf(h, key, id)).status).toBe('in_progress');

    const second = startWorker();
    await untilPolling(second);
    const done = await untilStatus(h, key, id, 'completed', 120_000);
    expect(done.request_counts).toEqual({ total: 12, completed: 12, failed: 0 });
    await expectSettledOnce(h, id, 12);
    expect((await h.call('GET', '/api/v1/balance', { key })).json()).toMatchObject({ holdsActive: 0 });
    second.proc.kill('SIGTERM');
    await second.exited;
  }, 240_000);
});

describe('a batch in Temporal', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ batchLimits: { perBatch: 2, perAccount: 4 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('shows its own search attributes; terminated from the UI, the reconciler starts it again and it carries on', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const id = await makeBatch(
      h,
      key,
      [1, 2, 3, 4, 5, 6].map((i) => chatLine(i, 'sim:delay=600 sim:tokens=2')),
    );
    const handle = h.client.workflow.getHandle(id);
    const described = await handle.describe();
    expect(described.type).toBe('batch');
    expect(described.typedSearchAttributes.get(BatchId)).toBe(id);
    expect(described.typedSearchAttributes.get(BatchLines)).toBe(6);
    await handle.terminate('as an operator would, from the UI');
    // The lines already started finish on their own; the batch waits for its workflow.
    await new Promise((r) => setTimeout(r, 2_000));
    const report = await reconcileNow(h);
    expect(report.batchesResumed).toEqual([id]);
    const done = await untilStatus(h, key, id, 'completed', 60_000);
    expect(done.request_counts).toEqual({ total: 6, completed: 6, failed: 0 });
    await expectSettledOnce(h, id, 6);
    const final = await eventually(async () => {
      const d = await h.client.workflow.getHandle(id).describe();
      return d.status.name === 'COMPLETED' ? d : undefined;
    });
    expect(final.typedSearchAttributes.get(BatchStatus)).toBe(done.status);
    expect(final.typedSearchAttributes.get(BatchCompleted)! + final.typedSearchAttributes.get(BatchFailed)!).toBe(6);
    const held = await h.pool.query<{ held_mc: number }>('SELECT held_mc FROM accounts WHERE id = $1', [accountId]);
    expect(held.rows[0]!.held_mc).toBe(0);
  }, 120_000);

  it('cancelled from the UI, it is cancelled: lines not started never run and are released, and no restart resumes it', async () => {
    const { key, accountId } = await h.account({ credits: 100 });
    const id = await makeBatch(
      h,
      key,
      [1, 2, 3, 4, 5, 6].map((i) => chatLine(i, 'sim:delay=1500 sim:tokens=2')),
    );
    const handle = h.client.workflow.getHandle(id);
    await eventually(async () => ((await batchOf(h, key, id)).status === 'in_progress' ? true : undefined));
    await handle.cancel();
    const done = await untilStatus(h, key, id, 'cancelled', 60_000);
    expect(done.request_counts.total).toBe(6);
    expect(done.request_counts.completed).toBeLessThan(6);
    const report = await reconcileNow(h);
    expect(report.batchesResumed).not.toContain(id);
    const charged = await h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ledger_entries e JOIN generations g ON g.id = e.generation_id
        WHERE g.batch_id = $1 AND e.entry = 'charge'`,
      [id],
    );
    expect(charged.rows[0]!.n).toBe(done.request_counts.completed);
    const held = await h.pool.query<{ held_mc: number }>('SELECT held_mc FROM accounts WHERE id = $1', [accountId]);
    expect(held.rows[0]!.held_mc).toBe(0);
  }, 120_000);
});

describe('the completion window', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ batchLimits: { perBatch: 2, perAccount: 4 }, batches: { completionWindowMs: 4_000 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('ending stops the batch: lines in flight and never started released, the batch expired', async () => {
    const { key } = await h.account({ credits: 100 });
    const id = await makeBatch(
      h,
      key,
      [1, 2, 3, 4].map((i) => chatLine(i, 'sim:delay=30000 sim:tokens=2')),
    );
    const done = await untilStatus(h, key, id, 'expired', 30_000);
    expect(done.request_counts).toEqual({ total: 4, completed: 0, failed: 4 });
    const errors = (await h.call('GET', `/v1/files/${done.error_file_id!}/content`, { key })).body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { response: unknown; error: { code: string } });
    expect(errors.map((e) => e.error.code)).toEqual([
      'batch_expired',
      'batch_expired',
      'batch_expired',
      'batch_expired',
    ]);
    expect((await h.call('GET', '/api/v1/balance', { key })).json()).toMatchObject({ balance: 100, holdsActive: 0 });
  }, 60_000);
});

describe('two accounts', () => {
  let h: Harness;
  beforeAll(async () => {
    // Few provider slots, so that a batch's lines queue for them.
    h = await startHarness({ providerConcurrency: 4, batchLimits: { perBatch: 40, perAccount: 40 } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('one with a large batch filling the provider’s slots; the other’s single image is served before the batch is done', async () => {
    const a = await h.account({ credits: 1_000 });
    const b = await h.account({ credits: 10 });
    const id = await makeBatch(
      h,
      a.key,
      Array.from({ length: 120 }, (_, i) => imageLine(i + 1, `frame ${i + 1} sim:delay=400`)),
      '/v1/images/generations',
    );
    await eventually(
      async () => ((await batchOf(h, a.key, id)).request_counts.completed >= 4 ? true : undefined),
      60_000,
      200,
    );
    const started = Date.now();
    const single = await h.call('POST', '/api/v1/generate', {
      key: b.key,
      body: { kind: 'image', model: 'flux', prompt: 'a single lighthouse sim:delay=400' },
    });
    const tookMs = Date.now() - started;
    expect(single.statusCode).toBe(200);
    expect(single.json<{ status: string }>().status).toBe('succeeded');
    const batch = await batchOf(h, a.key, id);
    // Served while the batch still had most of its lines to run: it did not wait behind them.
    expect(batch.status).toBe('in_progress');
    expect(batch.request_counts.completed + batch.request_counts.failed).toBeLessThan(100);
    console.log(
      `the other account's image took ${tookMs} ms while the batch had ${batch.request_counts.completed} of 120 done`,
    );
    await untilStatus(h, a.key, id, 'completed', 180_000);
  }, 240_000);
});
