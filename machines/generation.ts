import { assign, setup } from 'xstate';
import type { GenerationFailure, GenerationStatus, RunOutput } from '../core/vocabulary';

/**
 * The lifecycle of one admitted generation, and nothing else: which state follows which event,
 * and which named effects each step asks for. It performs no I/O; the workflow runs the effects
 * (as activities, through a typed table) and feeds their outcomes back as events. The hold is
 * already placed when it starts (the API admits in PostgreSQL), and it decides the outcome: a
 * settle that could not be recorded is an event here like any other.
 *
 *   queued ─┬─(starting) STARTED ──────┬─► running ─RUN_SUCCEEDED─► settling ─SETTLED─► succeeded
 *           └─(waitingForSlot) SLOT_GRANTED ┘                             │                  ▲
 *   CANCEL or DEADLINE (queued, running), RUN_FAILED, START_REFUSED, SETTLE_FAILED          │
 *     ──► releasing ─RELEASED─► failed        releasing ─FOUND_SETTLED────────────────────┘
 */

export type GenerationEvent =
  /** `running` is recorded (no slot needed). */
  | { type: 'STARTED' }
  /** The generation had already ended when it was to start: its hold was released meanwhile. */
  | { type: 'START_REFUSED'; error: GenerationFailure }
  /** One of the account's slots is ours; the claim recorded `running`. */
  | { type: 'SLOT_GRANTED' }
  | { type: 'RUN_SUCCEEDED'; output: RunOutput }
  | { type: 'RUN_FAILED'; error: GenerationFailure }
  | { type: 'SETTLED' }
  /** The charge could not be recorded, or the hold was found released: nothing was charged. */
  | { type: 'SETTLE_FAILED'; error: GenerationFailure }
  /** The hold went back (or had gone back before). */
  | { type: 'RELEASED' }
  /** The hold was found charged already: the outcome was settled where the run was produced. */
  | { type: 'FOUND_SETTLED' }
  | { type: 'CANCEL'; reason: string }
  /** The generation's deadline passed before it finished (nothing in flight forever). */
  | { type: 'DEADLINE'; message: string };

export interface GenerationMachineInput {
  /** Videos wait for one of the account's slots before running. */
  needsSlot: boolean;
}

interface GenerationContext {
  needsSlot: boolean;
  output: RunOutput | null;
  error: GenerationFailure | null;
}

export const cancelledError = (reason: string): GenerationFailure => ({
  code: 'cancelled',
  message: reason,
  retryable: false,
});
/** A run that overstayed its deadline may well succeed when sent again. */
export const timeoutError = (message: string): GenerationFailure => ({ code: 'timeout', message, retryable: true });

/** Why a CANCEL or DEADLINE stops the generation, as its error. */
const stopError = (event: GenerationEvent): GenerationFailure =>
  event.type === 'DEADLINE'
    ? timeoutError(event.message)
    : cancelledError(event.type === 'CANCEL' ? event.reason : 'stopped');

/** Events that carry the failure the generation ends with. */
const failureOf = (event: GenerationEvent): GenerationFailure =>
  'error' in event ? event.error : { code: 'failed', message: 'generation failed', retryable: true };

export const generationMachine = setup({
  types: {
    context: {} as GenerationContext,
    events: {} as GenerationEvent,
    input: {} as GenerationMachineInput,
  },
  // Effects are declared, not performed: the workflow maps each name to an activity.
  actions: {
    startRunning: () => undefined,
    waitForSlot: () => undefined,
    runProvider: () => undefined,
    stopWork: () => undefined,
    settle: (_, _params: { output: RunOutput }) => undefined,
    release: (_, _params: { error: GenerationFailure }) => undefined,
    recordOutput: assign({ output: (_, params: { output: RunOutput }) => params.output }),
    recordError: assign({ error: (_, params: { error: GenerationFailure }) => params.error }),
  },
  guards: {
    needsSlot: ({ context }) => context.needsSlot,
  },
}).createMachine({
  id: 'generation',
  context: ({ input }) => ({ needsSlot: input.needsSlot, output: null, error: null }),
  initial: 'active',
  states: {
    active: {
      initial: 'queued',
      // One transition for every way a generation is stopped from outside while it is in flight.
      on: {
        CANCEL: {
          target: '#generation.releasing',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: stopError(event) }) }],
        },
        DEADLINE: {
          target: '#generation.releasing',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: stopError(event) }) }],
        },
        RUN_FAILED: {
          target: '#generation.releasing',
          actions: { type: 'recordError', params: ({ event }) => ({ error: failureOf(event) }) },
        },
        START_REFUSED: {
          target: '#generation.releasing',
          actions: { type: 'recordError', params: ({ event }) => ({ error: failureOf(event) }) },
        },
      },
      states: {
        queued: {
          initial: 'routing',
          states: {
            routing: {
              always: [{ guard: 'needsSlot', target: 'waitingForSlot' }, { target: 'starting' }],
            },
            waitingForSlot: {
              entry: 'waitForSlot',
              on: { SLOT_GRANTED: '#generation.active.running' },
            },
            starting: {
              entry: 'startRunning',
              on: { STARTED: '#generation.active.running' },
            },
          },
        },
        running: {
          entry: 'runProvider',
          on: {
            RUN_SUCCEEDED: {
              target: '#generation.settling',
              actions: { type: 'recordOutput', params: ({ event }) => ({ output: event.output }) },
            },
          },
        },
      },
    },
    // The run is over and its charge is being recorded: a cancel or deadline can no longer stop it.
    settling: {
      entry: {
        type: 'settle',
        params: ({ context }) => ({ output: context.output ?? { outputKey: null, outputText: null } }),
      },
      on: {
        SETTLED: 'succeeded',
        SETTLE_FAILED: {
          target: 'releasing',
          actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
        },
      },
    },
    // The hold is going back. The ledger may find it charged already (the API settled a reply it
    // produced): then the generation succeeded after all.
    releasing: {
      entry: {
        type: 'release',
        params: ({ context }) => ({
          error: context.error ?? { code: 'failed', message: 'generation failed', retryable: true },
        }),
      },
      on: {
        RELEASED: 'failed',
        FOUND_SETTLED: 'succeeded',
      },
    },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
  },
});

/** The named effects the machine asks for, each with its parameters: what the workflow must run. */
export interface EffectParams {
  startRunning: undefined;
  waitForSlot: undefined;
  runProvider: undefined;
  stopWork: undefined;
  settle: { output: RunOutput };
  release: { error: GenerationFailure };
}
export type EffectName = keyof EffectParams;
export type GenerationEffect<K extends EffectName = EffectName> = { [P in K]: { type: P; params: EffectParams[P] } }[K];

const EFFECTS: Readonly<Record<EffectName, true>> = {
  startRunning: true,
  waitForSlot: true,
  runProvider: true,
  stopWork: true,
  settle: true,
  release: true,
};
const isEffect = (action: { type: string; params?: unknown }): action is GenerationEffect =>
  Object.hasOwn(EFFECTS, action.type);

/** Keeps the effects among a transition's actions (assignments are the machine's own business). */
export function effectsOf(actions: readonly { type: string; params?: unknown }[]): GenerationEffect[] {
  return actions.filter(isEffect);
}

/**
 * Where the machine ends for a run whose hold the ledger has moved already (a chat the API ran and
 * recorded before starting its workflow): whatever the run reported, a settled hold ends
 * `succeeded` (a release finds it charged) and a released one `failed` (a settle finds it
 * released), with the run's own failure, or for a success found released `releasedError`. The
 * verdict of running the machine through it (test/unit/machines/generation-machine.test.ts holds the two
 * together), without its cost: a workflow that only records it then completes in its first task.
 */
export function endOfRecorded(
  report: { ok: true } | { ok: false; error: GenerationFailure },
  recorded: 'settled' | 'released',
  releasedError: GenerationFailure,
): { status: 'succeeded'; error: null } | { status: 'failed'; error: GenerationFailure } {
  if (recorded === 'settled') return { status: 'succeeded', error: null };
  return { status: 'failed', error: report.ok ? releasedError : report.error };
}

/**
 * The status a snapshot stands for; undefined while the ledger is deciding it (`settling`,
 * `releasing`): only the outcome says whether the generation succeeded or failed, and the status
 * published before stays until then.
 */
export function statusOf(value: unknown): GenerationStatus | undefined {
  if (value === 'succeeded' || value === 'failed') return value;
  if (value === 'settling' || value === 'releasing') return undefined;
  const active = (value as { active?: unknown }).active;
  return active === 'running' ? 'running' : 'queued';
}
