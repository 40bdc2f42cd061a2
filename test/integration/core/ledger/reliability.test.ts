import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../../../../core/providers/simulator';
import type { Provider } from '../../../../core/providers/types';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { credits, generate, untilFinished } from '../../../support/api';

/**
 * A provider that behaves like the simulator, except that a prompt containing `poison:text` makes
 * it answer a reply PostgreSQL cannot store (NUL), so settling that generation fails for good.
 */
const simulator = createSimulator();
const poisoning: Provider = {
  streamChat: (job, ctx) => simulator.streamChat(job, ctx),
  async run(job, ctx) {
    const result = await simulator.run(job, ctx);
    return job.prompt.includes('poison:text') ? { ...result, text: `bad\u0000reply` } : result;
  },
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    provider: poisoning,
    deadlines: { video: 2_500, image: 60_000, chat: 60_000, upscale: 60_000 },
    syncWaitMs: 20_000,
  });
});
afterAll(async () => {
  await h?.close();
});

const workflowStatus = async (id: string) => {
  const handle = h.client.workflow.getHandle(id);
  await handle.result().catch(() => undefined);
  return (await handle.describe()).status.name;
};
/** The workflow's failure message, once it has closed (the record is final a step before the workflow is). */
const workflowFailure = async (id: string) => {
  const handle = h.client.workflow.getHandle(id);
  await handle.result().catch(() => undefined);
  const events = (await handle.fetchHistory()).events ?? [];
  return events.at(-1)?.workflowExecutionFailedEventAttributes?.failure?.message;
};

describe('poison input never reaches the ledger', () => {
  it('a prompt with NUL is a 400 naming the field at once, in groups A and C, with nothing held and no workflow', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const c = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a cat\u0000' });
    const a = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'chat', messages: [{ role: 'user', content: 'hi\u0000' }] },
    });
    const lone = await generate(h, key, { kind: 'chat', prompt: 'half an emoji \ud83d' });
    // "At once": refused before anything was held or started, as the ledger and Temporal show below.
    expect(c.status).toBe(400);
    expect(c.body.error).toMatchObject({
      type: 'invalid_request_error',
      param: 'prompt',
      message: expect.stringMatching(/NUL/),
    });
    expect(a.statusCode).toBe(400);
    expect(a.json()).toMatchObject({ error: { param: 'messages.0.content' } });
    expect(lone.body.error).toMatchObject({ param: 'prompt', message: expect.stringMatching(/unpaired surrogate/) });
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
    const rows = await h.pool.query('SELECT 1 FROM generations WHERE account_id = $1', [accountId]);
    expect(rows.rowCount).toBe(0);
    let running = 0;
    for await (const _ of h.client.workflow.list({ query: `AccountId = "${accountId}"` })) running++;
    expect(running).toBe(0);
  });

  it('a run whose result PostgreSQL refuses fails at once (no endless retries), its hold released, nothing charged', async () => {
    const { key } = await h.account({ credits: 10 });
    const res = await h.call('POST', '/api/generate', {
      key,
      body: { kind: 'chat', model: 'chat-opus', prompt: 'poison:text please' },
    });
    const g = res.json<{ generation: { id: string; status: string; error: { code: string } | null } }>().generation;
    expect(g).toMatchObject({ status: 'failed', error: { code: 'settle_failed', retryable: true } });
    expect(await credits(h, key)).toMatchObject({ balance: 10, holdsActive: 0 });
    expect(await workflowStatus(g.id)).toBe('FAILED');
    expect(await workflowFailure(g.id)).toBe('settle_failed');
  });
});

describe('nothing stays in flight forever', () => {
  it('a running video past its deadline fails with timeout and its hold is released', async () => {
    const { key } = await h.account({ credits: 100 });
    const { body } = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'endless sim:delay=600000' });
    expect(await credits(h, key)).toMatchObject({ holdsActive: 42.5 });
    const done = await untilFinished(h, key, body.generation.id, 20_000);
    expect(done).toMatchObject({ status: 'failed', creditsCharged: 0, error: { code: 'timeout', retryable: true } });
    expect(done.error?.message).toMatch(/deadline/);
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
    expect(await workflowFailure(body.generation.id)).toBe('timeout');
  });

  it('a video still queued for a slot at its deadline fails the same way', async () => {
    const { key } = await h.account({ credits: 1_000 });
    const busy = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        generate(h, key, { kind: 'video', model: 'seedance-lite', prompt: `busy ${i} sim:delay=600000` }),
      ),
    );
    const waiting = await generate(h, key, { kind: 'video', model: 'kling', prompt: 'never gets a slot' });
    expect(waiting.body.generation.status).toBe('queued');
    const done = await untilFinished(h, key, waiting.body.generation.id, 20_000);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
    for (const b of busy) await untilFinished(h, key, b.body.generation.id, 20_000);
    expect(await credits(h, key)).toMatchObject({ balance: 1_000, holdsActive: 0 });
  });
});

describe('the Temporal UI tells failures from successes', () => {
  it('a failed generation is a failed workflow whose failure message is its error code; a success completes', async () => {
    const { key } = await h.account({ credits: 10 });
    const ok = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a pier' });
    const bad = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a pier sim:fail' });
    expect(bad.body.generation).toMatchObject({ status: 'failed', error: { code: 'provider_failed' } });
    expect(await workflowStatus(ok.body.generation.id)).toBe('COMPLETED');
    expect(await workflowStatus(bad.body.generation.id)).toBe('FAILED');
    expect(await workflowFailure(bad.body.generation.id)).toBe('provider_failed');
    // The API still answers with the record.
    expect((await h.call('GET', `/api/v1/generations/${bad.body.generation.id}`, { key })).json()).toMatchObject({
      status: 'failed',
    });
  });
});
