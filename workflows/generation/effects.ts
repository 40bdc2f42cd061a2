import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { GenerationProvider } from '../../core/search-attributes';
import type { ApiRunResult } from '../../core/workflow-contract';
import { creditsText } from '../../core/money';
import { failureMessage } from '../../core/vocabulary';
import type { GenerationFailure, GenerationKind, RunOutput } from '../../core/vocabulary';
import type { EffectName, EffectParams, GenerationEvent } from '../../machines/generation';
import { ledgerStep, pastDeadline, slotInPlace, slots } from './activity-options';
import { deadlineMessage } from './deadline';
import { RELEASED_BEFORE_SETTLE } from './run';
import type { GenerationRun } from './run';
import type { ProviderRun } from '../../activities/generation/provider';
import { runWithoutHoldingSlot } from './upstream-wait';

/** A chat choice of a batch line waiting for the others of its line looks again after this, doubling up to the max. */
const CHOICE_LOOK_MS = 1_000;
const CHOICE_LOOK_MAX_MS = 15_000;

/** The effects the machine names, each run as an activity; their outcomes come back as events. */
export type EffectTable = { [K in EffectName]: (params: EffectParams[K]) => Promise<void> };

export function effectTable(run: GenerationRun): EffectTable {
  return {
    startRunning: () => startRunning(run),
    waitForSlot: () => waitForSlot(run),
    runProvider: () => runProvider(run),
    stopWork: () => stopWork(run),
    settle: (params) => settle(run, params),
    release: (params) => release(run, params),
  };
}

async function startRunning({ input, events }: GenerationRun): Promise<void> {
  if (input.reported !== undefined || input.admittedRunning) {
    events.push({ type: 'STARTED' });
    return;
  }
  try {
    const outcome = await ledgerStep('mark running (the hold stays held)').markRunning({
      generationId: input.generationId,
      accountId: input.accountId,
      kind: input.kind,
    });
    events.push(
      outcome === 'finished'
        ? {
            type: 'START_REFUSED',
            error: { code: 'not_started', message: 'the generation ended before it could run', retryable: true },
          }
        : { type: 'STARTED' },
    );
  } catch (err) {
    if (isCancellation(err)) throw err;
    events.push({
      type: 'RUN_FAILED',
      error: { code: 'ledger_error', message: 'the generation could not be marked running', retryable: true },
    });
  }
}

async function waitForSlot(run: GenerationRun): Promise<void> {
  const { input } = run;
  inBackground(run, async () => {
    const req = { accountId: input.accountId, generationId: input.generationId };
    const first = patched(SLOT_IN_PLACE_PATCH) ? await firstLook(req) : 'waiting';
    const claim = first === 'waiting' ? await slots.claimVideoSlot(req) : first;
    return claim === 'granted'
      ? { type: 'SLOT_GRANTED' }
      : {
          type: 'START_REFUSED',
          error: { code: 'slot_lost', message: 'the generation ended while queued', retryable: true },
        };
  });
}

/** Since this, a video first looks for its slot in place, and waits with an activity only when none is free. */
const SLOT_IN_PLACE_PATCH = 'video-slot-in-place';

/** The first look in place; one that fails leaves the look to the wait, which has the retries. */
async function firstLook(req: {
  accountId: string;
  generationId: string;
}): Promise<'granted' | 'finished' | 'waiting'> {
  try {
    return await slotInPlace.claimVideoSlotInPlace(req);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return 'waiting';
  }
}

async function runProvider(run: GenerationRun): Promise<void> {
  const { input, events } = run;
  const reported = input.reported;
  if (reported !== undefined) {
    // The API ran this one (a streamed chat): its outcome came with the start.
    events.push(
      reported.ok ? { type: 'RUN_SUCCEEDED', output: reported.output } : { type: 'RUN_FAILED', error: reported.error },
    );
    return;
  }
  inBackground(run, async () => {
    const job = {
      generationId: input.generationId,
      kind: input.kind,
      model: input.admitted.model,
      prompt: input.prompt,
      params: input.params,
      internal: input.internal,
      accountId: input.accountId,
    };
    let output: RunOutput;
    if (input.kind === 'video') {
      output = await runWithoutHoldingSlot(run.provider, job, run.compensations);
    } else {
      try {
        output = await runToEnd(run, job);
      } catch (err) {
        if (run.deadlineOnRun === undefined || !pastDeadline(err)) throw err;
        return { type: 'DEADLINE', message: deadlineMessage(run.deadlineOnRun) };
      }
    }
    if (output.upstream !== undefined) {
      // The details are no command (the UI reads them by query); the attribute is one.
      setCurrentDetails(`served by upstream ${output.upstream}`);
      upsertSearchAttributes([{ key: GenerationProvider, value: output.upstream }]);
    }
    return { type: 'RUN_SUCCEEDED', output };
  });
}

/**
 * A run that never detaches: an image's or an upscale's in place when the worker has a provider
 * permit free (no dispatch through the provider queue), else, or after a transient failure in
 * place, from the queue. A run in place keeps its workflow task open, so a cancel reaches it only
 * at that task's heartbeat (about 8 s) or its end: fine for a render of seconds, not for a chat
 * that may think for minutes, which stays on the queue.
 */
async function runToEnd(run: GenerationRun, job: ProviderRun): Promise<RunOutput> {
  if (IN_PLACE_KINDS.has(run.input.kind) && patched(IN_PLACE_PATCH)) {
    try {
      const here = await run.inPlace.runProviderInPlace(job, run.input.accountId);
      if ('output' in here) return here.output;
    } catch (err) {
      if (isCancellation(err) || pastDeadline(err) || !failureOf(err).retryable) throw err;
      return run.afterInPlace.runProvider(job);
    }
  }
  return run.provider.runProvider(job);
}

/** Since this, an image's or an upscale's run is first tried in place. */
const IN_PLACE_PATCH = 'provider-runs-in-place';
const IN_PLACE_KINDS: ReadonlySet<GenerationKind> = new Set(['image', 'upscale']);

async function stopWork({ background }: GenerationRun): Promise<void> {
  for (const scope of background.splice(0)) scope.cancel();
}

async function settle(run: GenerationRun, { output }: EffectParams['settle']): Promise<void> {
  const { input, events } = run;
  const recorded = recordedByApi(run);
  if (recorded === 'settled') return void events.push({ type: 'SETTLED' });
  if (recorded === 'released') return settleFailed(run, RELEASED_BEFORE_SETTLE);
  let settled;
  try {
    const { upstream: _served, ...charge } = output;
    const charged = charge.chargeMc ?? input.quoteMc;
    const summary = `settle: charge ${creditsText(charged)} of the ${creditsText(input.quoteMc)} held, release the rest`;
    settled = await ledgerStep(summary).settle({ generationId: input.generationId, ...charge });
    // A chat choice of a batch line is charged with its line's others, all or none: the ledger
    // keeps its report and the last to succeed charges them all; until then it asks again.
    for (let pause = CHOICE_LOOK_MS; settled.outcome === 'waiting'; pause = Math.min(pause * 2, CHOICE_LOOK_MAX_MS)) {
      setCurrentDetails('succeeded; charged once every choice of its batch line has (all or none)');
      await sleep(pause);
      settled = await ledgerStep(`${summary}, once every choice of its line has succeeded`).settle({
        generationId: input.generationId,
        ...charge,
      });
    }
  } catch (err) {
    if (isCancellation(err)) throw err;
    // A charge that cannot be recorded is not charged: the machine gives the hold back.
    return settleFailed(run, {
      code: 'settle_failed',
      message: 'the charge could not be recorded; nothing was charged',
      retryable: true,
    });
  }
  // Another choice of its batch line failed: released with `choice_failed`, nothing was charged.
  if (settled.outcome === 'released' || (settled.outcome === 'already' && settled.code === 'choice_failed'))
    return settleFailed(run, { code: 'choice_failed', message: failureMessage('choice_failed'), retryable: true });
  // The API released the hold (its start of this workflow looked failed): nothing was charged.
  if (settled.outcome === 'already' && settled.state === 'released') return settleFailed(run, RELEASED_BEFORE_SETTLE);
  events.push({ type: 'SETTLED' });
}

async function release(run: GenerationRun, { error }: EffectParams['release']): Promise<void> {
  const { input, events } = run;
  const recorded = recordedByApi(run);
  if (recorded !== undefined)
    return void events.push(recorded === 'settled' ? { type: 'FOUND_SETTLED' } : { type: 'RELEASED' });
  const summary = `release: give back the ${creditsText(input.quoteMc)} held (${error.code}), charge nothing`;
  const released = await ledgerStep(summary).release({ generationId: input.generationId, error });
  if (released.outcome === 'already' && released.state === 'settled') {
    events.push({ type: 'FOUND_SETTLED' });
  } else {
    events.push({ type: 'RELEASED' });
  }
}

/** Long work runs beside the event loop so that a cancel can interrupt it. */
function inBackground({ background, events }: GenerationRun, work: () => Promise<GenerationEvent>): void {
  const scope = new CancellationScope();
  background.push(scope);
  scope.run(work).then(
    (event) => void events.push(event),
    (err: unknown) => {
      if (!isCancellation(err)) events.push({ type: 'RUN_FAILED', error: failureOf(err) });
    },
  );
}

/** A settle that did not charge: the machine decides what follows. */
function settleFailed({ events }: GenerationRun, error: GenerationFailure): void {
  events.push({ type: 'SETTLE_FAILED', error });
}

/** Where the API's own ledger call left a run it reported, when it reached the ledger. */
const recordedByApi = (run: GenerationRun): ApiRunResult['recorded'] => run.input.reported?.recorded;

// The record gets a code and our message; the activity's own failure (the upstream's text) stays
// in this workflow's history, for the operator, and in the worker's log.
function failureOf(err: unknown): GenerationFailure {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const code = (cause.details?.[0] as { code?: string } | undefined)?.code ?? 'provider_error';
    return {
      code,
      message: failureMessage(code),
      retryable: !cause.nonRetryable && cause.type !== 'ProviderRejectedError',
    };
  }
  return { code: 'provider_error', message: failureMessage('provider_error'), retryable: true };
}
