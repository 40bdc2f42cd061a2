import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAN_FAIRNESS_WEIGHTS } from '../../../../core/plans';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { generate, untilFinished } from '../../../support/api';

/**
 * Every generation's workflow carries its account as Temporal fairness key and its plan's share as
 * fairness weight, so that the task queues hand out work by weighted round robin across accounts.
 * (How long a lone request waits during another account's flood is `npm run fairness`'s to measure.)
 */
let h: Harness;
beforeAll(async () => {
  h = await startHarness({});
});
afterAll(async () => {
  await h?.close();
});

/** The priority the workflow was started with, as the server recorded it. */
async function startedPriority(workflowId: string) {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.priority;
}

describe('fair dispatch across accounts', () => {
  it.each(['free', 'samurai'] as const)(
    'a %s account’s image runs with its account as key and its plan’s weight',
    async (plan) => {
      const { key, accountId } = await h.account({ credits: 50, plan });
      const res = await generate(h, key, { kind: 'image', model: 'flux', prompt: 'a lighthouse' });
      expect(res.status).toBe(200);
      const id = res.body.generation.id;
      expect(await untilFinished(h, key, id)).toMatchObject({ status: 'succeeded' });
      const priority = await startedPriority(id);
      expect(priority?.fairnessKey).toBe(accountId);
      expect(priority?.fairnessWeight).toBe(PLAN_FAIRNESS_WEIGHTS[plan]);
    },
  );
});
