import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { generationMachine, phaseOf } from '../../machines/generation';
import type { GenerationEvent } from '../../machines/generation';

/** Feeds events through the pure transition function and records the phase and the effects asked for. */
function run(needsSlot: boolean, events: GenerationEvent[]) {
  let [snapshot, actions] = initialTransition(generationMachine, { needsSlot });
  const steps = [{ phase: phaseOf(snapshot.value), effects: actions.map((a) => a.type) }];
  for (const event of events) {
    [snapshot, actions] = transition(generationMachine, snapshot, event);
    steps.push({ phase: phaseOf(snapshot.value), effects: actions.map((a) => a.type) });
  }
  return { snapshot, steps, last: actions };
}

const output = { outputKey: 'gen_x/output.png', outputText: null };
const failure = { code: 'provider_failed', message: 'no', retryable: false };

describe('generation machine', () => {
  it('image: hold, run straight away, settle the output', () => {
    const { steps, snapshot, last } = run(false, [{ type: 'HOLD_PLACED' }, { type: 'PROVIDER_SUCCEEDED', output }]);
    expect(steps).toEqual([
      { phase: 'admitting', effects: ['placeHold'] },
      { phase: 'running', effects: ['markRunning', 'runProvider'] },
      { phase: 'succeeded', effects: ['settle'] },
    ]);
    expect(snapshot.status).toBe('done');
    expect(last[0]!.params).toEqual({ output });
  });

  it('video: waits in queued for a slot before running', () => {
    const { steps } = run(true, [{ type: 'HOLD_PLACED' }, { type: 'SLOT_GRANTED' }, { type: 'PROVIDER_SUCCEEDED', output }]);
    expect(steps.map((s) => s.phase)).toEqual(['admitting', 'queued', 'running', 'succeeded']);
    expect(steps[1]!.effects).toEqual(['waitForSlot']);
  });

  it('a refused hold ends in refused with no further effect', () => {
    const { steps, snapshot } = run(true, [{ type: 'HOLD_REFUSED' }]);
    expect(steps[1]).toEqual({ phase: 'refused', effects: [] });
    expect(snapshot.status).toBe('done');
  });

  it('a provider failure releases the hold with the provider error', () => {
    const { steps, last } = run(false, [{ type: 'HOLD_PLACED' }, { type: 'PROVIDER_FAILED', error: failure }]);
    expect(steps.at(-1)).toEqual({ phase: 'failed', effects: ['release'] });
    expect(last[0]!.params).toEqual({ error: failure });
  });

  it('cancel while queued or running stops the work and releases with code cancelled', () => {
    for (const events of [
      [{ type: 'HOLD_PLACED' }, { type: 'CANCEL', reason: 'operator' }],
      [{ type: 'HOLD_PLACED' }, { type: 'SLOT_GRANTED' }, { type: 'CANCEL', reason: 'operator' }],
    ] as GenerationEvent[][]) {
      const { steps, last } = run(true, events);
      expect(steps.at(-1)).toEqual({ phase: 'failed', effects: ['stopWork', 'release'] });
      expect(last[1]!.params).toEqual({ error: { code: 'cancelled', message: 'operator', retryable: false } });
    }
  });

  it('a cancel during admission waits for the hold, then releases it', () => {
    const { steps, last } = run(true, [{ type: 'CANCEL', reason: 'early' }, { type: 'HOLD_PLACED' }]);
    expect(steps.map((s) => s.phase)).toEqual(['admitting', 'admitting', 'failed']);
    expect(last.map((a) => a.type)).toEqual(['release']);
    expect(last[0]!.params).toMatchObject({ error: { code: 'cancelled', message: 'early' } });
  });

  it('a cancel during admission of a refused hold changes nothing: there is nothing to release', () => {
    const { steps } = run(false, [{ type: 'CANCEL', reason: 'early' }, { type: 'HOLD_REFUSED' }]);
    expect(steps.at(-1)).toEqual({ phase: 'refused', effects: [] });
  });

  it('terminal states are never left', () => {
    const succeeded = run(false, [{ type: 'HOLD_PLACED' }, { type: 'PROVIDER_SUCCEEDED', output }]);
    for (const event of [{ type: 'CANCEL', reason: 'late' }, { type: 'PROVIDER_FAILED', error: failure }] as GenerationEvent[]) {
      const [next, actions] = transition(generationMachine, succeeded.snapshot, event);
      expect(phaseOf(next.value)).toBe('succeeded');
      expect(actions).toEqual([]);
    }
    const failed = run(false, [{ type: 'HOLD_PLACED' }, { type: 'PROVIDER_FAILED', error: failure }]);
    const [next, actions] = transition(generationMachine, failed.snapshot, { type: 'PROVIDER_SUCCEEDED', output });
    expect(phaseOf(next.value)).toBe('failed');
    expect(actions).toEqual([]);
  });

  it('a late provider result after a cancel is ignored', () => {
    const cancelled = run(false, [{ type: 'HOLD_PLACED' }, { type: 'CANCEL', reason: 'x' }]);
    const [next, actions] = transition(generationMachine, cancelled.snapshot, { type: 'PROVIDER_SUCCEEDED', output });
    expect(phaseOf(next.value)).toBe('failed');
    expect(actions).toEqual([]);
  });

  it('a deadline fails a queued or running generation with a retryable timeout, stops its work and releases', () => {
    for (const [needsSlot, before] of [[true, [{ type: 'HOLD_PLACED' }]], [false, [{ type: 'HOLD_PLACED' }]]] as [boolean, GenerationEvent[]][]) {
      const { steps, last, snapshot } = run(needsSlot, [...before, { type: 'DEADLINE', message: 'over 10 min' }]);
      expect(steps[steps.length - 1]).toEqual({ phase: 'failed', effects: ['stopWork', 'release'] });
      expect(last[1]!.params).toEqual({ error: { code: 'timeout', message: 'over 10 min', retryable: true } });
      expect(snapshot.status).toBe('done');
    }
  });

  it('a deadline after the end changes nothing', () => {
    const { steps } = run(false, [{ type: 'HOLD_PLACED' }, { type: 'PROVIDER_SUCCEEDED', output }, { type: 'DEADLINE', message: 'late' }]);
    expect(steps[steps.length - 1]).toEqual({ phase: 'succeeded', effects: [] });
  });
});
