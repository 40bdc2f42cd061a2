import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { initialTransition, transition } from 'xstate';
import { GenerationStatus as StatusAttribute } from '../../core/search-attributes';
import { cancelSignal, phaseQuery } from '../../core/workflow-contract';
import type {
  ApiRunResult,
  GenerationResult,
  GenerationWorkflow,
  GenerationWorkflowInput,
} from '../../core/workflow-contract';
import { creditsText } from '../../core/money';
import { SLOT_KINDS } from '../../core/vocabulary';
import type { GenerationFailure, GenerationStatus } from '../../core/vocabulary';
import { effectsOf, endOfRecorded, generationMachine, statusOf } from '../../machines/generation';
import type { EffectName, GenerationEffect } from '../../machines/generation';
import { providerActivities, providerInPlace } from './activity-options';
import { startDeadline } from './deadline';
import { effectTable } from './effects';
import type { EffectTable } from './effects';
import { RELEASED_BEFORE_SETTLE } from './run';
import type { GenerationRun } from './run';

/** The status the phase query answers, and the last one upserted as the search attribute. */
interface Phase {
  current: GenerationStatus;
  published: GenerationStatus;
}

/**
 * One admitted generation, from its hold to its charge or release. The XState machine decides
 * every step; this workflow runs the effects it names, through the table in effects.ts, and turns
 * their outcomes into the machine's events.
 */
export const generation: GenerationWorkflow = async (input: GenerationWorkflowInput): Promise<GenerationResult> => {
  const needsSlot = SLOT_KINDS.has(input.kind);
  // Admitted running and needing no slot, a generation's run is all that is left of its deadline:
  // the provider activity's schedule-to-close timeout keeps it, and no timer is started.
  const deadlineOnRun = input.admittedRunning === true && !needsSlot ? input.deadlineMs : undefined;
  const model = input.admitted.model;
  const quote = input.admitted.free ? 'a free reply' : `${creditsText(input.quoteMc)} held`;
  const runSummary = `run ${input.kind} on ${model} (${quote})`;
  const run: GenerationRun = {
    input,
    provider: providerActivities(input.kind, runSummary, deadlineOnRun),
    inPlace: providerInPlace(input.kind, runSummary, deadlineOnRun),
    deadlineOnRun,
    events: [],
    background: [],
    compensations: [],
  };
  const phase: Phase = { current: 'queued', published: 'queued' };

  setHandler(phaseQuery, () => phase.current);
  // A chat the API ran and the ledger recorded: the end is known, and recording it is all that is
  // left (one task, the floor's shape). The machine's verdict for it, without running the machine.
  const reported = input.reported;
  if (reported?.recorded !== undefined) return endRecorded(input, reported, reported.recorded, phase);

  listen(run);
  const deadline = startDeadline(run);
  const machine = machineDriver(run, needsSlot, phase);
  try {
    await machine.drive();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from outside (e.g. the Temporal UI): the machine decides what that means, and the
    // compensations it asks for (release) run to completion.
    run.events.push({ type: 'CANCEL', reason: 'cancelled by an operator' });
    await CancellationScope.nonCancellable(machine.drive);
  }
  deadline.cancel();
  if (run.compensations.length > 0) await Promise.all(run.compensations);

  // A failed generation ends as a failed workflow, so an operator tells failures from successes in
  // the Temporal UI list; its error code is the failure message.
  const failure = machine.failure();
  if (failure) throw generationFailed(failure);
  return { generationId: input.generationId, phase: phase.current };
};

/** A reported chat whose outcome the ledger recorded ends as the machine would end it. */
function endRecorded(
  input: GenerationWorkflowInput,
  reported: ApiRunResult,
  recorded: NonNullable<ApiRunResult['recorded']>,
  phase: Phase,
): GenerationResult {
  const end = endOfRecorded(reported, recorded, RELEASED_BEFORE_SETTLE);
  phase.current = end.status;
  if (end.error) throw generationFailed(end.error);
  return { generationId: input.generationId, phase: phase.current };
}

/** The signal a running generation takes: a cancel. */
function listen(run: GenerationRun): void {
  setHandler(cancelSignal, (reason) => void run.events.push({ type: 'CANCEL', reason }));
}

/**
 * The machine, driven: each effect it asks for runs to its end (effects that move money never stop
 * halfway, even when the workflow itself is cancelled), then the next event moves it on, until it
 * is done. `drive` is called again after a cancel, from where the machine stands.
 */
function machineDriver(run: GenerationRun, needsSlot: boolean, phase: Phase) {
  const { input, events } = run;
  let [snapshot, pending] = initialTransition(generationMachine, { needsSlot });
  // The start set the status: `queued`, `running` for a generation admitted running, or the end a
  // reported chat came to (read back from the start event, so that it is not upserted again).
  phase.published = input.reported !== undefined || input.admittedRunning ? startedStatus() : 'queued';
  const effects: EffectTable = effectTable(run);
  const perform = <K extends EffectName>(effect: GenerationEffect<K>): Promise<void> =>
    effects[effect.type](effect.params);

  const publishPhase = (): void => {
    const status = statusOf(snapshot.value);
    if (status === undefined) return;
    // A status the start already passed (`queued` of a generation admitted running, `running` of a
    // reported chat) is no news.
    if (STATUS_ORDER[status] < STATUS_ORDER[phase.published]) return;
    phase.current = status;
    if (phase.current === phase.published) return;
    phase.published = phase.current;
    upsertSearchAttributes([{ key: StatusAttribute, value: phase.current }]);
  };

  const drive = async (): Promise<void> => {
    for (;;) {
      for (const effect of effectsOf(pending.splice(0))) {
        await CancellationScope.nonCancellable(() => perform(effect));
      }
      publishPhase();
      if (snapshot.status === 'done') return;
      await condition(() => events.length > 0);
      [snapshot, pending] = transition(generationMachine, snapshot, events.shift()!);
    }
  };

  return {
    drive,
    /** The machine's failure once it is done, or null when the generation succeeded. */
    failure: (): GenerationFailure | null => (statusOf(snapshot.value) === 'failed' ? snapshot.context.error : null),
  };
}

/** How a failed generation fails its workflow: its error code is the failure message the UI lists. */
const generationFailed = (failure: GenerationFailure): ApplicationFailure =>
  ApplicationFailure.create({
    type: 'GenerationFailed',
    message: failure.code,
    nonRetryable: true,
    details: [failure],
  });

/** The status this workflow's start set (its search attribute), as the start event recorded it. */
function startedStatus(): GenerationStatus {
  const status = workflowInfo().typedSearchAttributes.get(StatusAttribute);
  return status === 'running' || status === 'succeeded' || status === 'failed' ? status : 'queued';
}

/** Statuses in the order a generation passes them. */
const STATUS_ORDER: Readonly<Record<GenerationStatus, number>> = { queued: 0, running: 1, succeeded: 2, failed: 2 };
