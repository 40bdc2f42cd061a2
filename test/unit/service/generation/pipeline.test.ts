import { describe, expect, it } from 'vitest';
import { InsufficientCreditsError } from '../../../../core/errors';
import type { Principal } from '../../../../core/accounts/principal';
import type { GenerationView } from '../../../../core/generation/view';
import type { PricedGeneration } from '../../../../core/generation/workflow-input';
import type { GenerationWorkflowInput } from '../../../../core/workflow-contract';
import { createPipeline } from '../../../../service/generation/pipeline';
import type { PipelineDeps, SubmitKind } from '../../../../service/generation/pipeline';
import type { SubmitOptions, SubmittedMany } from '../../../../service/generation/types';

const principal: Principal = { accountId: 'acc_1', apiKeyId: 'key_1', scopes: ['image'], models: null };
const request = { kind: 'image' as const, model: 'flux', prompt: 'a lighthouse at dusk' };
const opts: SubmitOptions = { door: 'group-a' };
const earlier: SubmittedMany = { generations: [{ id: 'gen_earlier' } as GenerationView], repeated: true };

/** The steps each stage was asked to take, in order. */
function recorder(admitted: Awaited<ReturnType<PipelineDeps['admission']['admit']>> | Error, prior?: string) {
  const steps: string[] = [];
  const admission: PipelineDeps['admission'] = {
    limitCustomer: () => {
      steps.push('rate limit');
      return Promise.resolve();
    },
    priorClaim: () => {
      steps.push('idempotency');
      return Promise.resolve(prior);
    },
    admit: (priced) => {
      steps.push(`hold ${priced.length}`);
      return admitted instanceof Error ? Promise.reject(admitted) : Promise.resolve(admitted);
    },
    firstGenerations: (_account, firstId) => {
      steps.push(`first generations ${firstId}`);
      return Promise.resolve(earlier);
    },
  };
  const kind: SubmitKind<SubmitOptions & { count?: number }, string, string> = {
    beforeHold: (priced: PricedGeneration[]) => {
      steps.push(`own ${priced.map((p) => p.kind).join(',')}`);
      return 'ready';
    },
    notHeld: (ready, why) => void steps.push(`undo ${ready}: ${why}`),
    start: (held, ready) => {
      steps.push(`start ${held.inputs.length} with ${ready}`);
      return 'started';
    },
    answerRepeat: (first) => `repeat of ${first.generations[0]!.id}`,
  };
  return { steps, submit: createPipeline({ admission, serves: () => false }), kind };
}

const held = { inputs: [{ generationId: 'gen_1' } as GenerationWorkflowInput], createdAt: new Date() };

describe('the submit pipeline', () => {
  it('runs rate limit, Idempotency-Key, price and the kind’s own steps, hold, then start', async () => {
    const { steps, submit, kind } = recorder(held);
    await expect(submit(kind, request, principal, opts)).resolves.toBe('started');
    expect(steps).toEqual(['rate limit', 'idempotency', 'own image', 'hold 1', 'start 1 with ready']);
  });

  it('prices `count` generations of one request and holds them together', async () => {
    const { steps, submit, kind } = recorder(held);
    await submit(kind, request, principal, { ...opts, count: 3 });
    expect(steps).toContain('own image,image,image');
    expect(steps).toContain('hold 3');
  });

  it('answers a true repeat from the first request, pricing and holding nothing', async () => {
    const { steps, submit, kind } = recorder(held, 'gen_earlier');
    await expect(submit(kind, request, principal, opts)).resolves.toBe('repeat of gen_earlier');
    expect(steps).toEqual(['rate limit', 'idempotency', 'first generations gen_earlier']);
  });

  it('undoes the kind’s work when the hold is refused, and throws the refusal', async () => {
    const { steps, submit, kind } = recorder(new InsufficientCreditsError(10, 1));
    await expect(submit(kind, request, principal, opts)).rejects.toBeInstanceOf(InsufficientCreditsError);
    expect(steps.at(-1)).toBe('undo ready: not admitted');
  });

  it('answers a repeat that claimed the key meanwhile as a repeat, undoing the kind’s work', async () => {
    const { steps, submit, kind } = recorder({ repeatOf: 'gen_earlier' });
    await expect(submit(kind, request, principal, opts)).resolves.toBe('repeat of gen_earlier');
    expect(steps.slice(-2)).toEqual(['undo ready: a repeat', 'first generations gen_earlier']);
  });

  it('refuses a key without the kind’s scope before anything is held', async () => {
    const { steps, submit, kind } = recorder(held);
    await expect(submit(kind, request, { ...principal, scopes: [] }, opts)).rejects.toThrow(/scope/);
    expect(steps).toEqual(['rate limit', 'idempotency']);
  });
});
