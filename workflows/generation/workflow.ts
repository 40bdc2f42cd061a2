import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { LocalActivityOptions } from '@temporalio/workflow';
import { initialTransition, transition } from 'xstate';
import type { GenerationActivities } from '../../activities';
import { GenerationProvider, GenerationStatus as StatusAttribute } from '../../core/search-attributes';
import { apiRunResultSignal, cancelSignal, phaseQuery, providerTaskQueueOf } from '../../core/workflow-contract';
import type {
  ApiRunResult,
  GenerationResult,
  GenerationWorkflow,
  GenerationWorkflowInput,
} from '../../core/workflow-contract';
import { creditsText } from '../../core/money';
import { failureMessage, SLOT_KINDS } from '../../core/vocabulary';
import type { GenerationFailure, GenerationKind, GenerationStatus } from '../../core/vocabulary';
import { effectsOf, endOfRecorded, generationMachine, statusOf } from '../../machines/generation';
import type { EffectName, EffectParams, GenerationEffect, GenerationEvent } from '../../machines/generation';
import { runWithoutHoldingSlot } from './upstream-wait';

// Ledger steps are short database transactions: as local activities they run inside the workflow
// task instead of a round trip through the server each. Each is idempotent, so a re-run after a
// crash is safe. A permanent database error (invalid input, a constraint) is not retried; a
// transient one (connection, serialization, deadlock) is, for a bounded time, after which the
// generation fails cleanly and the reconciler finishes what is left (docs/decisions/0012-retries.md).
const LEDGER_OPTIONS: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: {
    initialInterval: '500 ms',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    nonRetryableErrorTypes: ['LedgerPermanentError'],
  },
};
/** A ledger step, with the line the Temporal UI shows for it (what it does to the money). */
const ledgerStep = (summary: string) => proxyLocalActivities<GenerationActivities>({ ...LEDGER_OPTIONS, summary });

// A video's slot wait holds no worker slot (activities/generation/slots.ts): each attempt claims or parks its
// task token and completes asynchronously, and whoever frees a slot of the account completes it.
// The attempt's timeout is only the safety poll, for a wake that was lost; the retry is the next
// look, and the generation's deadline bounds the whole wait.
const slots = proxyActivities<GenerationActivities>({
  summary: "wait for one of the account's video slots (the hold stays held)",
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 1, nonRetryableErrorTypes: ['LedgerPermanentError'] },
});

/** `deadlineMs`: the run is the generation's deadline (nothing to wait for before it), so all its attempts end by then. */
function providerActivities(kind: GenerationKind, summary: string, deadlineMs?: number): GenerationActivities {
  return proxyActivities<GenerationActivities>({
    summary,
    taskQueue: providerTaskQueueOf(workflowInfo().taskQueue),
    startToCloseTimeout: kind === 'video' || kind === 'upscale' ? '1 hour' : '10 minutes',
    ...(deadlineMs === undefined ? {} : { scheduleToCloseTimeout: deadlineMs }),
    heartbeatTimeout: '10 seconds',
    // A worker restart mid-job costs an attempt too, so allow a few before giving up.
    retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes: ['ProviderRejectedError'] },
  });
}

/** The provider's run ended because the generation's deadline passed (its schedule-to-close timeout). */
const pastDeadline = (err: unknown): boolean => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE';
};

/**
 * One admitted generation, from its hold to its charge or release. The XState machine decides
 * every step; this workflow runs the effects it names, through the table below, and turns their
 * outcomes into the machine's events.
 */
export const generation: GenerationWorkflow = async (input: GenerationWorkflowInput): Promise<GenerationResult> => {
  const needsSlot = SLOT_KINDS.has(input.kind);
  // Admitted running and needing no slot, a generation's run is all that is left of its deadline:
  // the provider activity's schedule-to-close timeout keeps it, and no timer is started.
  const deadlineOnRun = input.admittedRunning === true && !needsSlot ? input.deadlineMs : undefined;
  const model = input.admitted.model;
  const quote = input.admitted.free ? 'a free reply' : `${creditsText(input.quoteMc)} held`;
  const provider = providerActivities(input.kind, `run ${input.kind} on ${model} (${quote})`, deadlineOnRun);
  const events: GenerationEvent[] = [];
  const background: CancellationScope[] = [];
  /** Clean-ups a stopped run left under way (an upstream job to cancel): the workflow ends after them. */
  const compensations: Promise<unknown>[] = [];
  let phase: GenerationStatus = 'queued';

  setHandler(phaseQuery, () => phase);
  // A chat the API ran and the ledger recorded: the end is known, and recording it is all that is
  // left (one task, the floor's shape). The machine's verdict for it, without running the machine.
  const reported = input.reported;
  if (reported?.recorded !== undefined) {
    const end = endOfRecorded(reported, reported.recorded, RELEASED_BEFORE_SETTLE);
    phase = end.status;
    if (end.error) throw generationFailed(end.error);
    return { generationId: input.generationId, phase };
  }

  setHandler(cancelSignal, (reason) => void events.push({ type: 'CANCEL', reason }));
  // A chat the API ran itself comes with its report (`reported`): started once the reply has
  // ended, it records the outcome in its first task. Chats of the earlier shape (`apiRun`) were
  // started as the reply began and wait for the report as a signal, on one timer.
  let apiRunResult: ApiRunResult | undefined = input.reported;
  setHandler(apiRunResultSignal, (result) => {
    apiRunResult ??= result;
  });
  const apiRun = input.apiRun;
  const ranByApi = apiRun !== undefined || input.reported !== undefined;

  // Nothing stays in flight forever (DESIGN §5).
  const deadline = new CancellationScope();
  const timeout = deadlineOnRun === undefined ? deadlineOf(input) : undefined;
  if (timeout !== undefined) {
    deadline
      .run(() => sleep(timeout.ms))
      .then(
        () => {
          // The report's wait ran out first: the API died mid-stream, the hold goes back.
          if (timeout.reportWait) {
            if (apiRunResult === undefined) events.push(reportMissing(timeout.ms));
          } else {
            events.push({ type: 'DEADLINE', message: deadlineMessage(timeout.ms) });
          }
        },
        () => undefined,
      );
  }

  let [snapshot, pending] = initialTransition(generationMachine, { needsSlot });
  // The start set the status: `queued`, `running` for a generation admitted running, or the end a
  // reported chat came to (read back from the start event, so that it is not upserted again).
  let published: GenerationStatus = ranByApi || input.admittedRunning ? startedStatus() : 'queued';

  // The record gets a code and our message; the activity's own failure (the upstream's text) stays
  // in this workflow's history, for the operator, and in the worker's log.
  const failureOf = (err: unknown): GenerationFailure => {
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
  };

  /** Long work runs beside the event loop so that a cancel can interrupt it. */
  const inBackground = (work: () => Promise<GenerationEvent>): void => {
    const scope = new CancellationScope();
    background.push(scope);
    scope.run(work).then(
      (event) => void events.push(event),
      (err: unknown) => {
        if (!isCancellation(err)) events.push({ type: 'RUN_FAILED', error: failureOf(err) });
      },
    );
  };

  /** A settle that did not charge: the machine decides what follows. */
  const settleFailed = (error: GenerationFailure): void => {
    events.push({ type: 'SETTLE_FAILED', error });
  };

  /** Where the API's own ledger call left a run it reported, when it reached the ledger. */
  const recordedByApi = (): ApiRunResult['recorded'] => apiRunResult?.recorded;

  const effects: { [K in EffectName]: (params: EffectParams[K]) => Promise<void> } = {
    async startRunning() {
      if (apiRun?.admittedRunning || input.reported !== undefined || input.admittedRunning) {
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
    },
    async waitForSlot() {
      inBackground(async () => {
        const claim = await slots.claimVideoSlot({ accountId: input.accountId, generationId: input.generationId });
        return claim === 'granted'
          ? { type: 'SLOT_GRANTED' }
          : {
              type: 'START_REFUSED',
              error: { code: 'slot_lost', message: 'the generation ended while queued', retryable: true },
            };
      });
    },
    async runProvider() {
      if (ranByApi) {
        // The API ran this one (a streamed chat): what it reported, given at the start or (earlier
        // shape) awaited as a signal, bounded by the workflow's one timer.
        inBackground(async () => {
          await condition(() => apiRunResult !== undefined);
          const result = apiRunResult!;
          return result.ok
            ? { type: 'RUN_SUCCEEDED', output: result.output }
            : { type: 'RUN_FAILED', error: result.error };
        });
        return;
      }
      inBackground(async () => {
        const job = {
          generationId: input.generationId,
          kind: input.kind,
          model,
          prompt: input.prompt,
          params: input.params,
          internal: input.internal,
        };
        let output;
        if (input.kind === 'video') {
          output = await runWithoutHoldingSlot(provider, job, compensations);
        } else {
          try {
            output = await provider.runProvider(job);
          } catch (err) {
            if (deadlineOnRun === undefined || !pastDeadline(err)) throw err;
            return { type: 'DEADLINE', message: deadlineMessage(deadlineOnRun) };
          }
        }
        if (output.upstream !== undefined) {
          // The details are no command (the UI reads them by query); the attribute is one.
          setCurrentDetails(`served by upstream ${output.upstream}`);
          upsertSearchAttributes([{ key: GenerationProvider, value: output.upstream }]);
        }
        return { type: 'RUN_SUCCEEDED', output };
      });
    },
    async stopWork() {
      for (const scope of background.splice(0)) scope.cancel();
    },
    async settle({ output }) {
      const recorded = recordedByApi();
      if (recorded === 'settled') return void events.push({ type: 'SETTLED' });
      if (recorded === 'released') return settleFailed(RELEASED_BEFORE_SETTLE);
      let settled;
      try {
        const { upstream: _served, ...charge } = output;
        const charged = charge.chargeMc ?? input.quoteMc;
        const summary = `settle: charge ${creditsText(charged)} of the ${creditsText(input.quoteMc)} held, release the rest`;
        settled = await ledgerStep(summary).settle({ generationId: input.generationId, ...charge });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // A charge that cannot be recorded is not charged: the machine gives the hold back.
        return settleFailed({
          code: 'settle_failed',
          message: 'the charge could not be recorded; nothing was charged',
          retryable: true,
        });
      }
      // The API released the hold (its start of this workflow looked failed): nothing was charged.
      if (settled.outcome === 'already' && settled.state === 'released') return settleFailed(RELEASED_BEFORE_SETTLE);
      events.push({ type: 'SETTLED' });
    },
    async release({ error }) {
      const recorded = recordedByApi();
      if (recorded !== undefined)
        return void events.push(recorded === 'settled' ? { type: 'FOUND_SETTLED' } : { type: 'RELEASED' });
      const summary = `release: give back the ${creditsText(input.quoteMc)} held (${error.code}), charge nothing`;
      const released = await ledgerStep(summary).release({ generationId: input.generationId, error });
      if (released.outcome === 'already' && released.state === 'settled') {
        events.push({ type: 'FOUND_SETTLED' });
      } else {
        events.push({ type: 'RELEASED' });
      }
    },
  };
  const perform = <K extends EffectName>(effect: GenerationEffect<K>): Promise<void> =>
    effects[effect.type](effect.params);

  const publishPhase = (): void => {
    const status = statusOf(snapshot.value);
    if (status === undefined) return;
    // A status the start already passed (`queued` of a generation admitted running, `running` of a
    // reported chat) is no news.
    if (STATUS_ORDER[status] < STATUS_ORDER[published]) return;
    phase = status;
    if (phase === published) return;
    published = phase;
    upsertSearchAttributes([{ key: StatusAttribute, value: phase }]);
  };

  // Effects that move money never stop halfway, even when the workflow itself is cancelled.
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

  try {
    await drive();
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from outside (e.g. the Temporal UI): the machine decides what that means, and the
    // compensations it asks for (release) run to completion.
    events.push({ type: 'CANCEL', reason: 'cancelled by an operator' });
    await CancellationScope.nonCancellable(drive);
  }
  deadline.cancel();
  if (compensations.length > 0) await Promise.all(compensations);

  // A failed generation ends as a failed workflow, so an operator tells failures from successes in
  // the Temporal UI list; its error code is the failure message.
  const failure = statusOf(snapshot.value) === 'failed' ? snapshot.context.error : null;
  if (failure) throw generationFailed(failure);
  return { generationId: input.generationId, phase };
};

/** How a failed generation fails its workflow: its error code is the failure message the UI lists. */
const generationFailed = (failure: GenerationFailure): ApplicationFailure =>
  ApplicationFailure.create({
    type: 'GenerationFailed',
    message: failure.code,
    nonRetryable: true,
    details: [failure],
  });

/** A settle that found the hold released (the API's or the reconciler's doing): nothing was charged. */
const RELEASED_BEFORE_SETTLE: GenerationFailure = {
  code: 'not_started',
  message: 'the hold was released before the run finished',
  retryable: true,
};

/**
 * The workflow's one timer: its deadline, or for a chat the API runs the sooner of that and the
 * wait for the API's report (`reportWait` when the wait is what it times).
 */
function deadlineOf(input: GenerationWorkflowInput): { ms: number; reportWait: boolean } | undefined {
  // A reported chat has run already; should its ledger step be left to do, that step is bounded.
  if (input.reported !== undefined) return undefined;
  const wait = input.apiRun?.deadlineMs;
  if (wait !== undefined && (input.deadlineMs === undefined || wait < input.deadlineMs))
    return { ms: wait, reportWait: true };
  return input.deadlineMs === undefined ? undefined : { ms: input.deadlineMs, reportWait: false };
}

/** What the API said about a chat it ran, never reported in time: it died mid-stream, the hold goes back. */
const reportMissing = (ms: number): GenerationEvent => ({
  type: 'RUN_FAILED',
  error: { code: 'timeout', message: `the API did not report the run within ${ms} ms`, retryable: true },
});

/** The status this workflow's start set (its search attribute), as the start event recorded it. */
function startedStatus(): GenerationStatus {
  const status = workflowInfo().typedSearchAttributes.get(StatusAttribute);
  return status === 'running' || status === 'succeeded' || status === 'failed' ? status : 'queued';
}

/** Statuses in the order a generation passes them. */
const STATUS_ORDER: Readonly<Record<GenerationStatus, number>> = { queued: 0, running: 1, succeeded: 2, failed: 2 };

const deadlineMessage = (ms: number): string =>
  `the generation did not finish within its deadline of ${deadlineText(ms)}`;

/** A deadline as its error message says it: a client's short one (`Cancel-After: 2`) in seconds. */
const deadlineText = (ms: number): string =>
  ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
