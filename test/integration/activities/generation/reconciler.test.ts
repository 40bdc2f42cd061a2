import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconcileReport } from '../../../../activities/generation/reconcile';
import { admit } from '../../../../core/ledger';
import type { NewGeneration } from '../../../../core/ledger';
import { newId } from '../../../../core/ids';
import { ensureReconcilerSchedule, reconcilerScheduleId } from '../../../../runtime/reconciler-schedule';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generate, untilFinished, untilStarted } from '../../../support/api';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** One pass of the reconciler, as the schedule runs it, on this test's task queue. */
const reconcile = (graceMs = 0) =>
  h.client.workflow.execute('reconcile', {
    taskQueue: h.taskQueue,
    workflowId: `reconcile-${newId('gen')}`,
    args: [{ graceMs }],
  }) as Promise<ReconcileReport>;

const statusOf = async (id: string) =>
  (await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id])).rows[0]?.status;

/** Admits a generation of a fresh account the way the API does, and starts no workflow for it. */
async function admitted(generation: Omit<NewGeneration, 'id' | 'accountId' | 'apiKeyId'>) {
  const account = await h.account({ credits: 50 });
  const id = newId('gen');
  await admit(h.pool, [{ ...generation, id, accountId: account.accountId, apiKeyId: account.keyId }]);
  return { ...account, id };
}

describe('the reconciler', () => {
  it('releases the hold of a generation whose workflow never started, once', async () => {
    // As if the API died right after its hold transaction.
    const { key, id } = await admitted({
      kind: 'image',
      model: 'image-flux',
      params: {},
      internal: {},
      prompt: 'orphan',
      quoteMc: 3_000,
    });
    expect(await credits(h, key)).toMatchObject({ balance: 47, holdsActive: 3 });

    // Too young for a pass with a grace period: it may be an admission still starting.
    expect((await reconcile(60_000)).released.map((r) => r.generationId)).not.toContain(id);
    const report = await reconcile();
    expect(report.released).toContainEqual({ generationId: id, reason: 'not_started' });
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
    const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json();
    expect(g).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'not_started', retryable: true } });
    expect((await reconcile()).released.map((r) => r.generationId)).not.toContain(id);
  });

  it('releases the hold of a chat the API runs once its deadline has passed with no outcome recorded (the API died mid-reply)', async () => {
    // A chat the API runs starts its workflow only at its end: while the reply runs there is none,
    // and the hold's own deadline says how long that may last.
    const { key, id } = await admitted({
      kind: 'chat',
      model: 'claude-haiku',
      params: { maxTokens: 100 },
      internal: { ratePer1kMc: 700, recordedByApi: true },
      prompt: 'a reply cut short',
      quoteMc: 70,
      startsRunning: true,
      resolveWithinMs: 3_000,
    });
    expect(await credits(h, key)).toMatchObject({ holdsActive: 0.07 });
    // Still within its deadline: a live reply, whatever the grace period.
    expect((await reconcile()).released.map((r) => r.generationId)).not.toContain(id);
    expect(await statusOf(id)).toBe('running');

    const report = await eventually(async () => {
      const r = await reconcile();
      return r.released.some((x) => x.generationId === id) ? r : undefined;
    }, 20_000);
    expect(report.released).toContainEqual({ generationId: id, reason: 'timeout' });
    expect(await credits(h, key)).toMatchObject({ balance: 50, holdsActive: 0 });
    const g = (await h.call('GET', `/api/v1/generations/${id}`, { key })).json();
    expect(g).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'timeout', retryable: true } });
  });

  it('releases the hold of a terminated workflow, which frees its video slot for the next in line', async () => {
    const { key } = await h.account({ credits: 1_000 });
    const running = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: `slot ${i} sim:delay=600000` }),
      ),
    );
    await eventually(async () =>
      (await Promise.all(running.map((r) => statusOf(r.body.generation.id)))).every((s) => s === 'running')
        ? true
        : undefined,
    );
    const waiting = await generate(h, key, {
      kind: 'video',
      model: 'seedance-lite',
      prompt: 'next in line sim:delay=100',
    });
    expect(waiting.body.generation.status).toBe('queued');
    // Its workflow starts right after the answer; a pass with no grace period must not find it missing.
    await untilStarted(h, waiting.body.generation.id);

    // An operator terminates one from the Temporal UI: no compensation can run.
    const victim = running[0]!.body.generation.id;
    await h.client.workflow.getHandle(victim).terminate('operator terminated it');
    expect(await credits(h, key)).toMatchObject({ holdsActive: 6 * 15 });

    const report = await reconcile();
    expect(report.released).toContainEqual({ generationId: victim, reason: 'terminated' });
    // Running workflows are left alone.
    for (const r of running.slice(1))
      expect(report.released.map((x) => x.generationId)).not.toContain(r.body.generation.id);
    expect(await untilFinished(h, key, victim)).toMatchObject({ status: 'failed', error: { code: 'terminated' } });
    expect(await untilFinished(h, key, waiting.body.generation.id)).toMatchObject({
      status: 'succeeded',
      creditsCharged: 15,
    });

    for (const r of running.slice(1))
      await h.call('POST', `/api/v1/generations/${r.body.generation.id}/cancel`, { key });
    expect(await credits(h, key)).toMatchObject({ balance: 1_000 - 15, holdsActive: 0 });
  });

  it('runs as a Temporal schedule, created once however many workers start', async () => {
    const opts = { taskQueue: h.taskQueue, everyMs: 60_000, graceMs: 120_000 };
    await ensureReconcilerSchedule(h.client, opts);
    await ensureReconcilerSchedule(h.client, opts);
    const handle = h.client.schedule.getHandle(reconcilerScheduleId(h.taskQueue));
    const described = await handle.describe();
    expect(described.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'reconcile',
      taskQueue: h.taskQueue,
    });
    expect(described.spec.intervals?.[0]?.every).toBe(60_000);
    // Triggered now, a pass runs on this queue and reports.
    await handle.trigger();
    const run = await eventually(async () => {
      const d = await handle.describe();
      return d.info.recentActions[0]?.action.workflow.workflowId;
    });
    expect(await h.client.workflow.getHandle(run).result()).toMatchObject({ checked: expect.any(Number) });
    await handle.delete();
  });
});
