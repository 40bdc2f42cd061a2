/**
 * What an operator's actions in the Temporal UI or CLI do to a customer's money
 * (docs/operator-actions.md), each taken as an operator takes it: with the `temporal` CLI against
 * the running server. A reset never charges twice, a released hold never becomes a charge, a
 * terminated queued video gives its slot on at once, a paused provider run keeps its hold and its
 * slot until it is unpaused; and the UI shows what a newcomer needs to see.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { credits, generate, generateV1, untilFinished, untilFinishedV1, untilStarted } from '../../../support/api';
import { newId } from '../../../../core/ids';
import { admit } from '../../../../core/ledger';
import { createGenerationGateway } from '../../../../service/generation/temporal-gateway';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const run = promisify(execFile);
/** The `temporal` CLI against the tests' server, as an operator would type it. */
const temporal = async (...args: string[]): Promise<string> =>
  (await run(inject('temporalCliPath'), [...args, '--address', inject('temporalAddress')])).stdout;

const VIDEO_SLOTS = 1;
/** seedance-lite's price per video, in credits. */
const VIDEO_PRICE = 15;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ videoConcurrency: VIDEO_SLOTS });
});
afterAll(async () => {
  await h?.close();
});

const ledgerOf = async (id: string) =>
  (
    await h.pool.query<{ entry: string; n: number }>(
      `SELECT entry, count(*)::int AS n FROM ledger_entries WHERE generation_id = $1 GROUP BY entry ORDER BY entry`,
      [id],
    )
  ).rows;
const holdOf = async (id: string) =>
  (await h.pool.query<{ state: string }>('SELECT state FROM holds WHERE generation_id = $1', [id])).rows[0]?.state;
const statusOf = async (id: string) =>
  (await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id])).rows[0]?.status;
/** A queued video's wait, once its workflow has parked it in PostgreSQL. */
const parkedWait = (id: string) =>
  eventually(async () => {
    const r = await h.pool.query('SELECT 1 FROM video_slot_waits WHERE generation_id = $1', [id]);
    return r.rowCount ? true : undefined;
  });
const closed = (id: string) =>
  eventually(async () => {
    const d = await h.client.workflow.getHandle(id).describe();
    return d.status.name === 'RUNNING' ? undefined : d;
  }, 60_000);
/** Resets a closed generation's workflow as an operator would, and waits for the new run to close. */
const resetAndRun = async (id: string, type: 'FirstWorkflowTask' | 'LastWorkflowTask') => {
  const first = await closed(id);
  await temporal('workflow', 'reset', '--workflow-id', id, '--type', type, '--reason', 'test');
  await eventually(async () => {
    const d = await h.client.workflow.getHandle(id).describe();
    return d.runId !== first.runId && d.status.name !== 'RUNNING' ? d : undefined;
  }, 60_000);
};
/** The provider run of a generation, once it is under way (and paused, when asked): its activity id. */
const providerRun = async (id: string, paused = false) => {
  await untilStarted(h, id);
  return eventually(async () => {
    const d = await h.client.workflow.getHandle(id).describe();
    const pending = d.raw.pendingActivities?.find((a) => PROVIDER_RUNS.has(a.activityType?.name ?? ''));
    if (!pending?.activityId) return undefined;
    return !paused || pending.paused ? { activityId: pending.activityId } : undefined;
  }, 30_000);
};
/** The activities that run a generation on its provider (a video's first call is its submit). */
const PROVIDER_RUNS = new Set(['runProvider', 'startProviderRun']);

describe('what the Temporal UI shows an operator', () => {
  it('a summary with the price, details naming the account and the record, and each activity’s effect on money', async () => {
    const { key, accountId } = await h.account({ credits: 100, scopes: ['image'] });
    const { id } = await generateV1(h, key, {
      kind: 'image',
      model: 'flux',
      prompt: 'a kite',
      width: 1024,
      height: 768,
    });
    await untilFinishedV1(h, key, id);
    const described = await (await closed(id)).staticSummary();
    expect(described).toBe('image · image-flux · 1024×768 · 3 credits');
    const details = await (await closed(id)).staticDetails();
    expect(details).toContain(accountId);
    expect(details).toContain(`/api/v1/generations/${id}`);
    expect(details).toMatch(/3 credits held at submit/);

    const history = await h.client.workflow.getHandle(id).fetchHistory();
    const { payloadConverter } = h.client.options.loadedDataConverter;
    const summaries = (history.events ?? []).flatMap((e) =>
      e.userMetadata?.summary ? [payloadConverter.fromPayload<string>(e.userMetadata.summary)] : [],
    );
    expect(summaries).toEqual(
      expect.arrayContaining([
        // In place when the worker has a provider permit free (it has here), from the provider queue otherwise.
        expect.stringMatching(/^run image on image-flux \(3 credits held\)(, in place)?$/),
        expect.stringMatching(/^settle: charge 3 credits of the 3 credits held/),
      ]),
    );
  });

  it('"1 credit", not "1 credits"', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['chat'] });
    const { id } = await generateV1(h, key, { kind: 'chat', model: 'claude-haiku', prompt: 'hi sim:tokens=3' });
    await untilFinishedV1(h, key, id);
    const summary = await (await closed(id)).staticSummary();
    expect(summary).not.toMatch(/\b1 credits\b/);
    expect(summary).toMatch(/credit/);
  });

  it('lists our workers on the Workers page (worker heartbeats)', async () => {
    const listed = await eventually(async () => {
      const { workersInfo } = await h.client.workflowService.listWorkers({
        namespace: 'default',
        query: `TaskQueue = "${h.taskQueue}"`,
      });
      return workersInfo && workersInfo.length > 0 ? workersInfo : undefined;
    }, 90_000);
    expect(listed[0]?.workerHeartbeat?.taskQueue).toBe(h.taskQueue);
  }, 120_000);
});

/** A video that takes the account's one slot for a few seconds, once it is running. */
async function busyVideo(key: string): Promise<string> {
  const { id } = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'busy sim:delay=3000' })).body
    .generation;
  await eventually(async () => ((await statusOf(id)) === 'running' ? true : undefined));
  return id;
}
/**
 * No reconciler runs here: the slot the busy video frees is handed past the terminated one to the
 * next, and the terminated one's hold is released.
 */
async function expectSlotPassedOn(key: string, { busy, next, doomed }: { busy: string; next: string; doomed: string }) {
  expect(await untilFinished(h, key, busy)).toMatchObject({ status: 'succeeded' });
  expect(await untilFinished(h, key, next, 30_000)).toMatchObject({ status: 'succeeded' });
  expect(await untilFinished(h, key, doomed)).toMatchObject({
    status: 'failed',
    creditsCharged: 0,
    error: { code: 'terminated' },
  });
  expect(await holdOf(doomed)).toBe('released');
  expect(await credits(h, key)).toMatchObject({ balance: 1000 - 2 * VIDEO_PRICE, holdsActive: 0 });
}

describe('operator actions and money', () => {
  it('reset to the first workflow task of a succeeded image runs it again and charges it once', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const id = (await generate(h, key, { kind: 'image', model: 'flux', prompt: 'reset me' })).body.generation.id;
    expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded', creditsCharged: 3 });
    await resetAndRun(id, 'FirstWorkflowTask');
    expect(await ledgerOf(id)).toEqual([
      { entry: 'charge', n: 1 },
      { entry: 'hold', n: 1 },
    ]);
    expect(await credits(h, key)).toMatchObject({ balance: 97, holdsActive: 0 });
  });

  it('reset of a failed image never turns its released hold into a charge', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const id = (await generate(h, key, { kind: 'image', model: 'flux', prompt: 'fails sim:fail' })).body.generation.id;
    expect(await untilFinished(h, key, id)).toMatchObject({ status: 'failed', creditsCharged: 0 });
    await resetAndRun(id, 'LastWorkflowTask');
    expect((await ledgerOf(id)).find((e) => e.entry === 'charge')).toBeUndefined();
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });

  it('a queued video terminated gives its slot to the next one as soon as it frees, its hold released', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const video = (prompt: string) => generate(h, key, { kind: 'video', model: 'seedance-lite', prompt });
    const busy = await busyVideo(key);
    const doomed = (await video('terminated while queued')).body.generation.id;
    const next = (await video('next in line sim:delay=100')).body.generation.id;
    await parkedWait(doomed);
    await parkedWait(next);
    await temporal('workflow', 'terminate', '--workflow-id', doomed, '--reason', 'operator');
    await expectSlotPassedOn(key, { busy, next, doomed });
  });

  it('a queued video terminated before its workflow first looked (its start put off) gives its slot on too', async () => {
    const { key, accountId } = await h.account({ credits: 1000, scopes: ['video'] });
    const busy = await busyVideo(key);
    // Admitted and started as a paced start is, with its first workflow task a minute away.
    const doomed = {
      id: newId('gen'),
      accountId,
      apiKeyId: null,
      kind: 'video' as const,
      model: 'seedance-lite',
      prompt: 'terminated before it ever looked',
      params: {},
      internal: {},
      quoteMc: VIDEO_PRICE * 1000,
    };
    expect((await admit(h.pool, [doomed])).outcome).toBe('admitted');
    const { id: doomedId, ...generation } = doomed;
    await createGenerationGateway({ client: h.client, taskQueue: h.taskQueue }).start(
      { ...generation, generationId: doomedId, admitted: { free: false, model: generation.model } },
      60_000,
    );
    const next = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'next sim:delay=100' })).body
      .generation.id;
    await parkedWait(next);
    await temporal('workflow', 'terminate', '--workflow-id', doomedId, '--reason', 'operator');

    await expectSlotPassedOn(key, { busy, next, doomed: doomedId });
  });

  it('a paused provider run keeps its hold and its video slot; unpaused, it finishes and is charged once', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const id = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'paused sim:delay=6000' })).body
      .generation.id;
    const { activityId } = await providerRun(id);
    await temporal('activity', 'pause', '--workflow-id', id, '--activity-id', activityId, '--reason', 'test');
    await providerRun(id, true);
    const behind = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'behind sim:delay=100' }))
      .body.generation.id;
    // While it is paused the generation stays running, its hold held, the account's slot taken.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await statusOf(id)).toBe('running');
    expect(await holdOf(id)).toBe('held');
    expect(await statusOf(behind)).toBe('queued');
    expect(await credits(h, key)).toMatchObject({ holdsActive: 2 * VIDEO_PRICE });

    await temporal('activity', 'unpause', '--workflow-id', id, '--activity-id', activityId);
    expect(await untilFinished(h, key, id, 60_000)).toMatchObject({ status: 'succeeded', creditsCharged: VIDEO_PRICE });
    expect(await untilFinished(h, key, behind, 60_000)).toMatchObject({ status: 'succeeded' });
    expect((await ledgerOf(id)).find((e) => e.entry === 'charge')).toEqual({ entry: 'charge', n: 1 });
  }, 120_000);

  it('an activity reset runs the provider again from its first attempt and charges once', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const id = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'reset run sim:delay=3000' }))
      .body.generation.id;
    const { activityId } = await providerRun(id);
    await temporal('activity', 'reset', '--workflow-id', id, '--activity-id', activityId);
    expect(await untilFinished(h, key, id, 60_000)).toMatchObject({ status: 'succeeded', creditsCharged: VIDEO_PRICE });
    expect((await ledgerOf(id)).find((e) => e.entry === 'charge')).toEqual({ entry: 'charge', n: 1 });
  }, 90_000);

  it('cancel from the CLI fails a running video as cancelled and releases its hold', async () => {
    const { key } = await h.account({ credits: 1000, scopes: ['video'] });
    const id = (await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'cancel me sim:delay=20000' }))
      .body.generation.id;
    await providerRun(id);
    await temporal('workflow', 'cancel', '--workflow-id', id);
    expect(await untilFinished(h, key, id)).toMatchObject({
      status: 'failed',
      creditsCharged: 0,
      error: { code: 'cancelled' },
    });
    expect(await credits(h, key)).toMatchObject({ balance: 1000, holdsActive: 0 });
  });
});
