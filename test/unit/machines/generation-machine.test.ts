import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import { effectsOf, endOfRecorded, generationMachine, statusOf } from '../../../machines/generation';
import type { GenerationEvent, GenerationMachineInput } from '../../../machines/generation';

/** Feeds events through the pure transition function and records the status and the effects asked for. */
function run(input: boolean | GenerationMachineInput, events: GenerationEvent[]) {
  let [snapshot, actions] = initialTransition(
    generationMachine,
    typeof input === 'boolean' ? { needsSlot: input } : input,
  );
  const steps = [{ status: statusOf(snapshot.value), effects: effectsOf(actions).map((a) => a.type) }];
  for (const event of events) {
    [snapshot, actions] = transition(generationMachine, snapshot, event);
    steps.push({ status: statusOf(snapshot.value), effects: effectsOf(actions).map((a) => a.type) });
  }
  return { snapshot, steps, last: effectsOf(actions) };
}

const output = { outputKey: 'gen_x/output.png', outputText: null };
const failure = { code: 'provider_failed', message: 'no', retryable: false };
const settleFailure = { code: 'settle_failed', message: 'nothing was charged', retryable: true };

describe('generation machine', () => {
  it('image: starts queued (the hold is placed), records running, runs, settles, succeeds once settled', () => {
    const { steps, snapshot } = run(false, [
      { type: 'STARTED' },
      { type: 'RUN_SUCCEEDED', output },
      { type: 'SETTLED' },
    ]);
    expect(steps).toEqual([
      { status: 'queued', effects: ['startRunning'] },
      { status: 'running', effects: ['runProvider'] },
      // Settling is still `running` to the outside: only the settle's outcome decides.
      { status: undefined, effects: ['settle'] },
      { status: 'succeeded', effects: [] },
    ]);
    expect(snapshot.status).toBe('done');
    expect(run(false, [{ type: 'STARTED' }, { type: 'RUN_SUCCEEDED', output }]).last).toMatchObject([
      { type: 'settle', params: { output } },
    ]);
  });

  it('video: waits in queued for a slot; the slot claim is the start, so nothing writes running twice', () => {
    const { steps } = run(true, [{ type: 'SLOT_GRANTED' }, { type: 'RUN_SUCCEEDED', output }, { type: 'SETTLED' }]);
    expect(steps.map((s) => s.status)).toEqual(['queued', 'running', undefined, 'succeeded']);
    expect(steps.map((s) => s.effects)).toEqual([['waitForSlot'], ['runProvider'], ['settle'], []]);
  });

  it("a settle that failed is the machine's decision: the generation fails and its hold is released", () => {
    const { steps, last, snapshot } = run(false, [
      { type: 'STARTED' },
      { type: 'RUN_SUCCEEDED', output },
      { type: 'SETTLE_FAILED', error: settleFailure },
    ]);
    expect(steps.at(-1)).toEqual({ status: undefined, effects: ['release'] });
    expect(last[0]).toMatchObject({ type: 'release', params: { error: settleFailure } });
    expect(snapshot.context.error).toEqual(settleFailure);
  });

  it('a provider failure releases the hold with the provider error', () => {
    const { steps, snapshot } = run(false, [
      { type: 'STARTED' },
      { type: 'RUN_FAILED', error: failure },
      { type: 'RELEASED' },
    ]);
    expect(steps.slice(-2)).toEqual([
      { status: undefined, effects: ['release'] },
      { status: 'failed', effects: [] },
    ]);
    expect(run(false, [{ type: 'STARTED' }, { type: 'RUN_FAILED', error: failure }]).last[0]!.params).toEqual({
      error: failure,
    });
    expect(snapshot.status).toBe('done');
  });

  it('a release that finds the hold charged (the API settled the reply it produced) ends succeeded', () => {
    const { steps, snapshot } = run(false, [
      { type: 'STARTED' },
      { type: 'RUN_FAILED', error: failure },
      { type: 'FOUND_SETTLED' },
    ]);
    expect(steps.at(-1)).toEqual({ status: 'succeeded', effects: [] });
    expect(snapshot.status).toBe('done');
  });

  it('a run the ledger has recorded ends where the machine would take it, whichever way the hold moved', () => {
    const released = { code: 'not_started', message: 'released before the settle', retryable: true };
    for (const report of [{ ok: true, output } as const, { ok: false, error: failure } as const]) {
      for (const recorded of ['settled', 'released'] as const) {
        // What the workflow's effects answer for a recorded report (workflows/generation/workflow.ts).
        const settled: GenerationEvent =
          recorded === 'settled' ? { type: 'SETTLED' } : { type: 'SETTLE_FAILED', error: released };
        const events: GenerationEvent[] = report.ok
          ? [{ type: 'STARTED' }, { type: 'RUN_SUCCEEDED', output: report.output }, settled]
          : [{ type: 'STARTED' }, { type: 'RUN_FAILED', error: report.error }];
        let { snapshot } = run(false, events);
        if (snapshot.status !== 'done')
          snapshot = transition(
            generationMachine,
            snapshot,
            recorded === 'settled' ? { type: 'FOUND_SETTLED' } : { type: 'RELEASED' },
          )[0];
        const status = statusOf(snapshot.value);
        expect(endOfRecorded(report, recorded, released), `${String(report.ok)} ${recorded}`).toEqual({
          status,
          error: status === 'failed' ? snapshot.context.error : null,
        });
      }
    }
  });

  it('a generation that ended before it could start fails without running', () => {
    const refused = { code: 'not_started', message: 'released meanwhile', retryable: true };
    for (const needsSlot of [false, true]) {
      const { steps } = run(needsSlot, [{ type: 'START_REFUSED', error: refused }]);
      expect(steps.at(-1)).toEqual({ status: undefined, effects: ['release'] });
    }
  });

  it('cancel and deadline share one transition: stop the work, release, with their own error', () => {
    const stops: [GenerationEvent, object][] = [
      [
        { type: 'CANCEL', reason: 'operator' },
        { code: 'cancelled', message: 'operator', retryable: false },
      ],
      [
        { type: 'DEADLINE', message: 'over 10 min' },
        { code: 'timeout', message: 'over 10 min', retryable: true },
      ],
    ];
    for (const [stop, error] of stops) {
      for (const before of [[], [{ type: 'SLOT_GRANTED' }]] as GenerationEvent[][]) {
        const { steps, last } = run(true, [...before, stop]);
        expect(steps.at(-1)).toEqual({ status: undefined, effects: ['stopWork', 'release'] });
        expect(last[1]!.params).toEqual({ error });
      }
    }
  });

  it('a cancel or deadline while the charge is being recorded changes nothing: the settle decides', () => {
    const settling = run(false, [{ type: 'STARTED' }, { type: 'RUN_SUCCEEDED', output }]);
    for (const event of [
      { type: 'CANCEL', reason: 'late' },
      { type: 'DEADLINE', message: 'late' },
    ] as GenerationEvent[]) {
      const [next, actions] = transition(generationMachine, settling.snapshot, event);
      expect(next.value).toBe('settling');
      expect(effectsOf(actions)).toEqual([]);
    }
  });

  it('final states are never left', () => {
    const succeeded = run(false, [{ type: 'STARTED' }, { type: 'RUN_SUCCEEDED', output }, { type: 'SETTLED' }]);
    const failed = run(false, [{ type: 'STARTED' }, { type: 'RUN_FAILED', error: failure }, { type: 'RELEASED' }]);
    const events: GenerationEvent[] = [
      { type: 'FOUND_SETTLED' },
      { type: 'SETTLED' },
      { type: 'CANCEL', reason: 'late' },
      { type: 'RUN_FAILED', error: failure },
      { type: 'RUN_SUCCEEDED', output },
      { type: 'DEADLINE', message: 'late' },
      { type: 'SETTLE_FAILED', error: settleFailure },
    ];
    for (const [done, status] of [
      [succeeded, 'succeeded'],
      [failed, 'failed'],
    ] as const) {
      for (const event of events) {
        const [next, actions] = transition(generationMachine, done.snapshot, event);
        expect(statusOf(next.value)).toBe(status);
        expect(actions).toEqual([]);
      }
    }
  });

  it('asks only for effects the workflow knows (assignments stay inside the machine)', () => {
    const { last } = run(false, [{ type: 'STARTED' }, { type: 'RUN_FAILED', error: failure }]);
    expect(last.map((a) => a.type)).toEqual(['release']);
  });
});
