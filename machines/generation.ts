import { assign, setup } from 'xstate';

/**
 * The lifecycle of one generation, and nothing else: which state follows which event, and which
 * named side effects each step asks for. It performs no I/O; the workflow runs the effects
 * (as activities) and feeds their outcome back as events.
 *
 *   admitting ──HOLD_PLACED──► queued ──(slot)──► running ──PROVIDER_SUCCEEDED──► succeeded
 *       │                        │                   │
 *       └─HOLD_REFUSED─► refused └──CANCEL──► failed ◄─PROVIDER_FAILED / CANCEL
 *
 * `refused` is not a generation status: the hold failed, so no generation exists.
 */

export interface FailureInfo {
  code: string;
  message: string;
  retryable: boolean;
}

export interface ProviderOutput {
  outputKey: string | null;
  outputText: string | null;
  /** Set when the run is billed by use (per token) rather than by its quote. */
  chargeMc?: number;
  /** Per-token runs: the output tokens `chargeMc` pays for. */
  outputTokens?: number;
}

export interface GenerationMachineInput {
  /** Video jobs wait for one of the account's slots before running. */
  needsSlot: boolean;
}

export type GenerationEvent =
  | { type: 'HOLD_PLACED' }
  | { type: 'HOLD_REFUSED' }
  | { type: 'SLOT_GRANTED' }
  | { type: 'PROVIDER_SUCCEEDED'; output: ProviderOutput }
  | { type: 'PROVIDER_FAILED'; error: FailureInfo }
  | { type: 'CANCEL'; reason: string }
  /** The generation's deadline passed before it finished (DESIGN §5: nothing in flight forever). */
  | { type: 'DEADLINE'; message: string };

interface GenerationContext {
  needsSlot: boolean;
  cancelReason: string | null;
  output: ProviderOutput | null;
  error: FailureInfo | null;
}

export const cancelledError = (reason: string): FailureInfo => ({ code: 'cancelled', message: reason, retryable: false });
/** A run that overstayed its deadline may well succeed when sent again. */
export const timeoutError = (message: string): FailureInfo => ({ code: 'timeout', message, retryable: true });

export const generationMachine = setup({
  types: {
    context: {} as GenerationContext,
    events: {} as GenerationEvent,
    input: {} as GenerationMachineInput,
  },
  // Effects are declared, not performed: the workflow looks them up by name.
  actions: {
    placeHold: () => undefined,
    waitForSlot: () => undefined,
    markRunning: () => undefined,
    runProvider: () => undefined,
    stopWork: () => undefined,
    settle: (_, _params: { output: ProviderOutput }) => undefined,
    release: (_, _params: { error: FailureInfo }) => undefined,
    rememberCancel: assign({ cancelReason: (_, params: { reason: string }) => params.reason }),
    recordOutput: assign({ output: (_, params: { output: ProviderOutput }) => params.output }),
    recordError: assign({ error: (_, params: { error: FailureInfo }) => params.error }),
  },
  guards: {
    needsSlot: ({ context }) => context.needsSlot,
    cancelRequested: ({ context }) => context.cancelReason !== null,
  },
}).createMachine({
  id: 'generation',
  context: ({ input }) => ({ needsSlot: input.needsSlot, cancelReason: null, output: null, error: null }),
  initial: 'admitting',
  states: {
    admitting: {
      entry: 'placeHold',
      on: {
        HOLD_PLACED: [
          // A cancel that arrived while the hold was being placed wins once the hold exists.
          {
            guard: 'cancelRequested',
            target: 'failed',
            actions: { type: 'recordError', params: ({ context }) => ({ error: cancelledError(context.cancelReason ?? 'cancelled') }) },
          },
          { target: 'queued' },
        ],
        HOLD_REFUSED: 'refused',
        CANCEL: { actions: { type: 'rememberCancel', params: ({ event }) => ({ reason: event.reason }) } },
      },
    },
    queued: {
      initial: 'routing',
      states: {
        routing: {
          always: [{ guard: 'needsSlot', target: 'waitingForSlot' }, { target: '#generation.running' }],
        },
        waitingForSlot: {
          entry: 'waitForSlot',
          on: { SLOT_GRANTED: '#generation.running' },
        },
      },
      on: {
        CANCEL: {
          target: 'failed',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: cancelledError(event.reason) }) }],
        },
        DEADLINE: {
          target: 'failed',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: timeoutError(event.message) }) }],
        },
        // The slot wait itself can fail for good (e.g. the account vanished).
        PROVIDER_FAILED: {
          target: 'failed',
          actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
        },
      },
    },
    running: {
      entry: ['markRunning', 'runProvider'],
      on: {
        PROVIDER_SUCCEEDED: {
          target: 'succeeded',
          actions: { type: 'recordOutput', params: ({ event }) => ({ output: event.output }) },
        },
        PROVIDER_FAILED: {
          target: 'failed',
          actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
        },
        CANCEL: {
          target: 'failed',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: cancelledError(event.reason) }) }],
        },
        DEADLINE: {
          target: 'failed',
          actions: ['stopWork', { type: 'recordError', params: ({ event }) => ({ error: timeoutError(event.message) }) }],
        },
      },
    },
    succeeded: {
      type: 'final',
      entry: { type: 'settle', params: ({ context }) => ({ output: context.output ?? { outputKey: null, outputText: null } }) },
    },
    failed: {
      type: 'final',
      entry: {
        type: 'release',
        params: ({ context }) => ({ error: context.error ?? { code: 'failed', message: 'generation failed', retryable: true } }),
      },
    },
    refused: { type: 'final' },
  },
});

export type GenerationPhase = 'admitting' | 'queued' | 'running' | 'succeeded' | 'failed' | 'refused';

/** The top-level state, which is what the API calls the status (plus the pre-admission phases). */
export function phaseOf(value: unknown): GenerationPhase {
  if (typeof value === 'string') return value as GenerationPhase;
  return Object.keys(value as object)[0] as GenerationPhase;
}
