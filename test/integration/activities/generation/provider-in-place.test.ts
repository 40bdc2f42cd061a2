/**
 * A provider run that never detaches (an image here) runs in place, as a local activity of its own
 * workflow's worker, when a provider permit is free: no dispatch through the provider queue. A
 * transient failure in place goes on as the queue's run, a refusal does not; either way the money
 * moves once.
 */
import { Context } from '@temporalio/activity';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSimulator } from '../../../../core/providers/simulator';
import type { Provider } from '../../../../core/providers/types';
import { credits, generateV1, untilFinishedV1 } from '../../../support/api';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const EventType = proto.temporal.api.enums.v1.EventType;
let h: Harness;
/** Each attempt of each generation's run: in place (a local activity) or from the provider queue. */
const attempts = new Map<string, ('in place' | 'queue')[]>();
/** Generations whose first attempt fails as a dropped connection would. */
const failOnce = new Set<string>();

function recordingProvider(inner: Provider): Provider {
  return {
    ...inner,
    run: async (job, ctx) => {
      const where = Context.current().info.isLocal ? 'in place' : 'queue';
      const seen = attempts.get(job.generationId) ?? [];
      attempts.set(job.generationId, [...seen, where]);
      if (job.prompt.includes('flaky') && !failOnce.has(job.generationId)) {
        failOnce.add(job.generationId);
        throw new Error('connection reset by the upstream');
      }
      return inner.run(job, ctx);
    },
  };
}

beforeAll(async () => {
  // Few permits, as `npm run fairness` has them: the provider worker's idle polls must leave some free.
  h = await startHarness({ provider: recordingProvider(createSimulator()), providerConcurrency: 10 });
});
afterAll(async () => {
  await h?.close();
});

const image = (prompt: string) => ({ kind: 'image', model: 'flux', prompt, width: 512, height: 512 });
const eventTypes = async (id: string) =>
  ((await h.client.workflow.getHandle(id).fetchHistory()).events ?? []).map((e) => e.eventType);
const chargesOf = async (id: string) =>
  (
    await h.pool.query<{ entry: string }>(`SELECT entry FROM ledger_entries WHERE generation_id = $1 ORDER BY entry`, [
      id,
    ])
  ).rows.map((r) => r.entry);

describe('a provider run in place', () => {
  it('runs an image in its workflow’s worker, with no activity task on the provider queue, charged once', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const { id } = await generateV1(h, key, image('a lighthouse'));
    expect((await untilFinishedV1(h, key, id)).status).toBe('succeeded');
    expect(attempts.get(id)).toEqual(['in place']);
    const types = await eventTypes(id);
    expect(types).not.toContain(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(types).toContain(EventType.EVENT_TYPE_MARKER_RECORDED);
    expect(await chargesOf(id)).toEqual(['charge', 'hold']);
    expect(await credits(h, key)).toMatchObject({ balance: 97, holdsActive: 0 });
  });

  it('goes on as the queue’s run after a transient failure in place, and is charged once', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const { id } = await generateV1(h, key, image('a flaky lighthouse'));
    expect((await untilFinishedV1(h, key, id)).status).toBe('succeeded');
    expect(attempts.get(id)).toEqual(['in place', 'queue']);
    expect(await eventTypes(id)).toContain(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(await chargesOf(id)).toEqual(['charge', 'hold']);
    expect(await credits(h, key)).toMatchObject({ balance: 97, holdsActive: 0 });
  });

  it('ends at a refusal in place, with no second attempt from the queue, and releases the hold', async () => {
    const { key } = await h.account({ credits: 100, scopes: ['image'] });
    const { id } = await generateV1(h, key, image('a lighthouse sim:fail'));
    const done = await untilFinishedV1(h, key, id);
    expect(done.status).toBe('failed');
    expect(attempts.get(id)).toEqual(['in place']);
    expect(await chargesOf(id)).toEqual(['hold', 'release']);
    expect(await credits(h, key)).toMatchObject({ balance: 100, holdsActive: 0 });
  });
});
