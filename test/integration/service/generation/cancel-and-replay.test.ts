import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import { inject, afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, eventually } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { CURRENT_HISTORIES, patchIdsOf } from '../../../support/histories';
import { credits, generate, untilFinished, untilStarted } from '../../../support/api';
import { phaseQuery } from '../../../../core/workflow-contract';
import { newId } from '../../../../core/ids';
import { admit } from '../../../../core/ledger';
import { createGenerationGateway } from '../../../../service/generation/temporal-gateway';

/**
 * A chat the API ran whose ledger call failed (PostgreSQL out of reach at that moment): its
 * workflow, started with the unrecorded outcome, settles it itself. Returns its id once closed.
 */
async function reportedUnrecorded(accountId: string): Promise<string> {
  const generationId = newId('gen');
  const generation = {
    accountId,
    apiKeyId: null,
    kind: 'chat' as const,
    model: 'claude-haiku',
    prompt: 'hello',
    params: { maxTokens: 100 },
    internal: { ratePer1kMc: 700, recordedByApi: true },
    quoteMc: 70,
  };
  const admitted = await admit(h.pool, [
    { ...generation, id: generationId, startsRunning: true, resolveWithinMs: 60_000 },
  ]);
  if (admitted.outcome !== 'admitted') throw new Error('not admitted');
  await createGenerationGateway({ client: h.client, taskQueue: h.taskQueue }).record({
    ...generation,
    generationId,
    admitted: { free: false, model: generation.model },
    admittedRunning: true,
    reported: { ok: true, output: { outputKey: null, outputText: 'hi there', chargeMc: 14, outputTokens: 20 } },
  });
  await h.client.workflow.getHandle(generationId).result();
  const row = await h.pool.query<{ status: string; charged_mc: number }>(
    'SELECT status, charged_mc FROM generations WHERE id = $1',
    [generationId],
  );
  expect(row.rows[0]).toEqual({ status: 'succeeded', charged_mc: 14 });
  return generationId;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 30_000 });
});
afterAll(async () => {
  await h?.close();
});

const statusOf = async (id: string) =>
  (await h.pool.query<{ status: string }>('SELECT status FROM generations WHERE id = $1', [id])).rows[0]?.status;

describe('cancelling a workflow (as an operator does from the Temporal UI)', () => {
  it('fails a running job with code cancelled and releases its hold', async () => {
    const { key } = await h.account({ credits: 100 });
    const { body } = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'slow pan sim:delay=20000' });
    await eventually(async () => ((await statusOf(body.generation.id)) === 'running' ? true : undefined));
    expect(await credits(h, key)).toMatchObject({ holdsActive: 42.5 });

    await h.client.workflow.getHandle(body.generation.id).cancel();
    const done = await untilFinished(h, key, body.generation.id);
    expect(done).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'cancelled', retryable: false } });
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
    expect(await h.client.workflow.getHandle(body.generation.id).query(phaseQuery)).toBe('failed');
  });

  it('fails a job still waiting for a video slot and releases its hold', async () => {
    const { key } = await h.account({ credits: 1000 });
    const running = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: `busy ${i} sim:delay=3000` }),
      ),
    );
    await eventually(async () => {
      const states = await Promise.all(running.map((r) => statusOf(r.body.generation.id)));
      return states.every((s) => s === 'running') ? true : undefined;
    });
    const waiting = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'in the queue' });
    expect(waiting.body.generation.status).toBe('queued');
    expect(await credits(h, key)).toMatchObject({ holdsActive: 5 * 15 + 42.5 });

    // A `queued` answer comes before its workflow is started: an operator sees it a moment later.
    await untilStarted(h, waiting.body.generation.id);
    await h.client.workflow.getHandle(waiting.body.generation.id).cancel();
    const done = await untilFinished(h, key, waiting.body.generation.id);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    for (const r of running) await untilFinished(h, key, r.body.generation.id);
    expect(await credits(h, key)).toMatchObject({ balance: 1000 - 5 * 15, holdsActive: 0 });
  });
});

describe('retiring replay-only code', () => {
  it('the visibility query of docs/operations.md counts the workflows still open that started before a time', async () => {
    const doc = await readFile(new URL('../../../../docs/operations.md', import.meta.url), 'utf8');
    const query = /^temporal workflow count --query '(.+)'$/m.exec(doc)?.[1];
    expect(query, 'docs/operations.md shows the query').toContain('StartTime <');
    const before = (at: Date) =>
      query!.replace(/StartTime < "[^"]+"/, `StartTime < "${at.toISOString()}"`) + ` AND TaskQueue = "${h.taskQueue}"`;
    const { key } = await h.account({ credits: 100 });
    const { body } = await generate(h, key, {
      kind: 'video',
      model: 'kling',
      prompt: 'open for a while sim:delay=60000',
    });
    await untilStarted(h, body.generation.id);
    const started = new Date(Date.now() + 1_000);
    await eventually(async () => ((await h.client.workflow.count(before(started))).count === 1 ? true : undefined));
    // Nothing started before the workflow did is open; once it closes, nothing at all.
    expect((await h.client.workflow.count(before(new Date(Date.now() - 3_600_000)))).count).toBe(0);
    await h.client.workflow.getHandle(body.generation.id).cancel();
    await untilFinished(h, key, body.generation.id);
    await eventually(async () => ((await h.client.workflow.count(before(started))).count === 0 ? true : undefined));
  });
});

describe('determinism', () => {
  it('replays recorded histories of every path (success, failure, cancel) without divergence', async () => {
    const { key, accountId } = await h.account({ credits: 50, chatCap: 1 });
    const ids: string[] = [];
    ids.push((await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a bridge' })).body.generation.id);
    ids.push((await generate(h, key, { kind: 'chat', prompt: 'hello' })).body.generation.id);
    ids.push((await generate(h, key, { kind: 'image', model: 'flux', prompt: 'sim:fail' })).body.generation.id);
    // Group B chat: the API streams the reply itself, settles it, then starts the workflow with
    // the outcome (reported), which records it in its first task; a failed one the same way.
    const streamed = await h.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'auto', messages: [{ role: 'user', content: 'sim:tokens=3' }], stream: true },
    });
    ids.push(/"id":"(gen_[^"]+)"/.exec(streamed.body)![1]!);
    const failedChat = await h.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'auto', messages: [{ role: 'user', content: 'sim:fail' }] },
    });
    expect(failedChat.statusCode).toBe(502);
    ids.push(
      (
        await h.pool.query<{ id: string }>(
          "SELECT id FROM generations WHERE account_id = $1 AND prompt = 'sim:fail' AND kind = 'chat'",
          [accountId],
        )
      ).rows[0]!.id,
    );
    // The API's ledger call failed: the workflow settles from the outcome it was started with.
    ids.push(await reportedUnrecorded(accountId));
    // An image past its deadline while running: the provider activity's own timeout is the deadline.
    const late = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'image', model: 'flux', prompt: 'slow sim:delay=5000' },
      headers: { 'cancel-after': '1' },
    });
    expect(late.json()).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    ids.push(late.json<{ id: string }>().id);
    const video = await generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: 'sim:delay=200 dunes' });
    ids.push(video.body.generation.id);
    await untilFinished(h, key, video.body.generation.id);
    // A refusal is decided by the API in PostgreSQL: no generation, and no workflow either.
    const before = await h.pool.query('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId]);
    const refused = await generate(h, key, { kind: 'video', model: 'veo31', prompt: 'too dear' });
    expect(refused.status).toBe(402);
    expect(
      (await h.pool.query('SELECT count(*)::int AS n FROM generations WHERE account_id = $1', [accountId])).rows,
    ).toEqual(before.rows);

    // Every closed workflow on this queue: the paths above plus the cancelled ones of the other tests.
    const workflowIds = new Set<string>();
    await eventually(async () => {
      workflowIds.clear();
      for await (const wf of h.client.workflow.list({
        query: `TaskQueue = "${h.taskQueue}" AND ExecutionStatus != "Running"`,
      }))
        workflowIds.add(wf.workflowId);
      const phases = await Promise.all([...workflowIds].map((id) => h.client.workflow.getHandle(id).query(phaseQuery)));
      const covered = ['succeeded', 'failed'].every((p) => phases.includes(p as never));
      return ids.every((id) => workflowIds.has(id)) && covered && workflowIds.size >= ids.length + 2 ? true : undefined;
    });

    const histories = await Promise.all(
      [...workflowIds].map(async (workflowId) => ({
        workflowId,
        history: await h.client.workflow.getHandle(workflowId).fetchHistory(),
      })),
    );
    // RECORD_HISTORIES=1 refreshes the committed fixtures that test/unit/workflows/replay-fixtures.test.ts
    // replays, one per path, so later code must stay compatible with workflows already running.
    if (process.env.RECORD_HISTORIES === '1') await recordFixtures(histories);

    const bundle = { code: await readFile(inject('workflowBundlePath'), 'utf8') };
    const results = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, histories)) results.push(r);
    expect(results).toHaveLength(histories.length);
    for (const r of results) expect(r.error, r.workflowId).toBeUndefined();
  });
});

/** Writes one history per path, in the Temporal CLI's JSON format (what replay reads back). */
async function recordFixtures(histories: { workflowId: string }[]) {
  const dir = CURRENT_HISTORIES;
  await mkdir(dir, { recursive: true });
  const written = new Set<string>();
  for (const { workflowId } of histories) {
    const { stdout } = await promisify(execFile)(
      inject('temporalCliPath'),
      ['workflow', 'show', '--address', inject('temporalAddress'), '--workflow-id', workflowId, '--output', 'json'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const phase = await h.client.workflow.getHandle(workflowId).query(phaseQuery);
    const kind =
      (await h.pool.query<{ kind: string }>('SELECT kind FROM generations WHERE id = $1', [workflowId])).rows[0]
        ?.kind ?? 'none';
    const cancelled =
      stdout.includes('EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED') || stdout.includes('"signalName": "cancel"');
    // Chats the API ran itself come with its report (reported); other generations may be admitted
    // running. Each shape is a path of its own.
    const input = startInputOf(stdout);
    const shape =
      input?.reported !== undefined
        ? `-reported${input.reported.recorded === undefined ? '-unrecorded' : ''}`
        : input?.admittedRunning
          ? '-admitted-running'
          : '';
    // Those shapes' failures are told apart by their code.
    const code =
      shape !== '' && phase === 'failed'
        ? `-${(await h.pool.query<{ code: string }>("SELECT error->>'code' AS code FROM generations WHERE id = $1", [workflowId])).rows[0]?.code ?? 'failed'}`
        : '';
    // Named after the patch markers the path records too (workflows/generation/workflow.ts), which tell its branches apart.
    const patches = patchIdsOf(stdout)
      .map((id) => `-${id}`)
      .join('');
    const name = `${kind === 'none' ? phase : `${kind}-${phase}${cancelled ? '-cancelled' : ''}`}${shape}${code}${patches}`;
    if (written.has(name)) continue;
    written.add(name);
    // A fixture, once committed, stands for workflows that may still be running: never rewritten.
    const file = new URL(`${name}.json`, dir);
    if (existsSync(file)) continue;
    await writeFile(file, stdout);
  }
}

interface StartInput {
  reported?: { recorded?: string };
  admittedRunning?: boolean;
}

/** The workflow input recorded in a history's first event (payloads are base64 JSON). */
function startInputOf(historyJson: string): StartInput | undefined {
  const events = (
    JSON.parse(historyJson) as {
      events?: { workflowExecutionStartedEventAttributes?: { input?: { payloads?: { data?: string }[] } } }[];
    }
  ).events;
  const data = events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return data === undefined ? undefined : (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as StartInput);
}
