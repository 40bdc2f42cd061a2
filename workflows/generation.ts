import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { initialTransition, transition } from 'xstate';
import type { GenerationActivities } from '../activities';
import { generationMachine, phaseOf } from '../machines/generation';
import type { FailureInfo, GenerationEvent, GenerationPhase, ProviderOutput } from '../machines/generation';
import { GenerationModel, GenerationStatus } from '../core/search-attributes';
import { admissionQuery, admissionUpdate, apiRunResultSignal, cancelSignal, phaseQuery, providerTaskQueueOf } from './definitions';
import type { Admission, ApiRunResult, GenerationResult, GenerationWorkflowInput } from './definitions';

// Ledger steps are short database transactions: as local activities they run inside the workflow
// task instead of a round trip through the server each. Each is idempotent, so a re-run after a
// crash is safe. A permanent database error (invalid input, a constraint) is not retried; a
// transient one (connection, serialization, deadlock) is, for a bounded time, after which the
// generation fails cleanly and the reconciler finishes what is left (docs/decisions.md).
const ledger = proxyLocalActivities<GenerationActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { initialInterval: '500 ms', backoffCoefficient: 2, maximumInterval: '30 seconds', nonRetryableErrorTypes: ['LedgerPermanentError'] },
});

// The slot wait polls inside the activity and heartbeats, so a dead worker is noticed in seconds.
const slots = proxyActivities<GenerationActivities>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

function providerActivities(kind: GenerationWorkflowInput['kind']): GenerationActivities {
  return proxyActivities<GenerationActivities>({
    taskQueue: providerTaskQueueOf(workflowInfo().taskQueue),
    startToCloseTimeout: kind === 'video' || kind === 'upscale' ? '1 hour' : '10 minutes',
    heartbeatTimeout: '10 seconds',
    // A worker restart mid-job costs an attempt too, so allow a few before giving up.
    retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes: ['ProviderRejectedError'] },
  });
}

/**
 * One generation, from hold to charge or release. The XState machine decides every step; this
 * workflow only runs the effects it names and turns their outcomes into the machine's events.
 */
export async function generation(input: GenerationWorkflowInput): Promise<GenerationResult> {
  const provider = providerActivities(input.kind);
  const events: GenerationEvent[] = [];
  const background: CancellationScope[] = [];
  let admission: Admission | undefined;
  /** Set when the ledger, not the provider, decided that a finished run failed (see settle). */
  let finalFailure: FailureInfo | undefined;

  let [snapshot, pending] = initialTransition(generationMachine, { needsSlot: input.kind === 'video' });
  let phase: GenerationPhase = phaseOf(snapshot.value);

  setHandler(admissionUpdate, async () => {
    await condition(() => admission !== undefined);
    return admission!;
  });
  setHandler(phaseQuery, () => phase);
  setHandler(admissionQuery, () => admission ?? null);
  setHandler(cancelSignal, (reason) => void events.push({ type: 'CANCEL', reason }));
  let apiRunResult: ApiRunResult | undefined;
  setHandler(apiRunResultSignal, (result) => {
    apiRunResult ??= result;
  });

  // Nothing stays in flight forever (DESIGN §5). Workflows of the earlier code carry no deadline.
  const deadline = new CancellationScope();
  if (input.deadlineMs !== undefined) {
    const ms = input.deadlineMs;
    deadline.run(() => sleep(ms)).then(
      () => void events.push({ type: 'DEADLINE', message: `the generation did not finish within its deadline of ${Math.round(ms / 60_000)} min` }),
      () => undefined,
    );
  }

  const failureOf = (err: unknown): FailureInfo => {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure) {
      const code = (cause.details?.[0] as { code?: string } | undefined)?.code ?? 'provider_error';
      return { code, message: cause.message, retryable: !cause.nonRetryable && cause.type !== 'ProviderRejectedError' };
    }
    return { code: 'provider_error', message: (cause as Error | undefined)?.message ?? 'the provider failed', retryable: true };
  };

  /** Long work runs beside the event loop so that a cancel can interrupt it. */
  const inBackground = (work: () => Promise<GenerationEvent>): void => {
    const scope = new CancellationScope();
    background.push(scope);
    scope.run(work).then(
      (event) => void events.push(event),
      (err: unknown) => {
        if (!isCancellation(err)) events.push({ type: 'PROVIDER_FAILED', error: failureOf(err) });
      },
    );
  };

  const perform = async (action: { type: string; params?: unknown }): Promise<void> => {
    switch (action.type) {
      case 'placeHold': {
        if (input.admitted) {
          // The API placed the hold before starting this workflow.
          admission = { admitted: true, ...input.admitted };
          events.push({ type: 'HOLD_PLACED' });
          return;
        }
        const outcome = await ledger.placeHold({
          generation: {
            id: input.generationId,
            accountId: input.accountId,
            apiKeyId: input.apiKeyId,
            kind: input.kind,
            model: input.model,
            params: input.params,
            prompt: input.prompt,
          },
          amountMc: input.quoteMc,
          ...(input.freeChat ? { freeChat: input.freeChat } : {}),
        });
        admission = outcome.admitted
          ? { admitted: true, free: outcome.free, model: outcome.model }
          : { admitted: false, requiredMc: outcome.requiredMc, availableMc: outcome.availableMc };
        if (outcome.admitted && outcome.model !== input.model) {
          upsertSearchAttributes([{ key: GenerationModel, value: outcome.model }]);
        }
        events.push({ type: outcome.admitted ? 'HOLD_PLACED' : 'HOLD_REFUSED' });
        return;
      }
      case 'waitForSlot':
        inBackground(async () => {
          const claim = await slots.waitForVideoSlot({ accountId: input.accountId, generationId: input.generationId });
          return claim === 'granted'
            ? { type: 'SLOT_GRANTED' }
            : { type: 'PROVIDER_FAILED', error: { code: 'slot_lost', message: 'the generation ended while queued', retryable: true } };
        });
        return;
      case 'markRunning':
        try {
          await ledger.markRunning({ generationId: input.generationId });
        } catch (err) {
          if (isCancellation(err)) throw err;
          events.push({ type: 'PROVIDER_FAILED', error: { code: 'ledger_error', message: 'the generation could not be marked running', retryable: true } });
        }
        return;
      case 'runProvider':
        if (input.apiRun) {
          // The API runs this one (a streamed chat): wait for what it reports, or give up at the
          // deadline, which is how a hold outlives an API that died mid-stream: it is released.
          const { deadlineMs } = input.apiRun;
          inBackground(async () => {
            if (!(await condition(() => apiRunResult !== undefined, deadlineMs))) {
              return { type: 'PROVIDER_FAILED', error: { code: 'timeout', message: `the API did not report the run within ${deadlineMs} ms`, retryable: true } };
            }
            const result = apiRunResult!;
            return result.ok ? { type: 'PROVIDER_SUCCEEDED', output: result.output } : { type: 'PROVIDER_FAILED', error: result.error };
          });
          return;
        }
        inBackground(async () => {
          const output = await provider.runProvider({
            generationId: input.generationId,
            kind: input.kind,
            model: admission?.admitted ? admission.model : input.model,
            prompt: input.prompt,
            params: input.params,
          });
          return { type: 'PROVIDER_SUCCEEDED', output };
        });
        return;
      case 'stopWork':
        for (const scope of background.splice(0)) scope.cancel();
        return;
      case 'settle': {
        const { output } = action.params as { output: ProviderOutput };
        try {
          const settled = await ledger.settle({
            generationId: input.generationId,
            outputKey: output.outputKey,
            outputText: output.outputText,
            ...(output.chargeMc === undefined ? {} : { chargeMc: output.chargeMc }),
            ...(output.outputTokens === undefined ? {} : { outputTokens: output.outputTokens }),
          });
          // The API released the hold (its start of this workflow looked failed): nothing was charged.
          if (settled.outcome === 'already' && settled.state === 'released') finalFailure = { code: 'not_started', message: 'the hold was released before the run finished', retryable: true };
        } catch (err) {
          if (isCancellation(err) || !input.admitted) throw err;
          // A charge that cannot be recorded is not charged: give the hold back instead.
          finalFailure = { code: 'settle_failed', message: 'the charge could not be recorded; nothing was charged', retryable: true };
          await ledger.release({ generationId: input.generationId, error: finalFailure });
        }
        return;
      }
      case 'release': {
        const { error } = action.params as { error: FailureInfo };
        await ledger.release({ generationId: input.generationId, error });
        return;
      }
      default:
        // Assignments are applied by the machine itself; anything else is a programming error.
        if (!action.type.startsWith('xstate.')) throw ApplicationFailure.nonRetryable(`unknown machine action ${action.type}`);
    }
  };

  const publishPhase = (): void => {
    const next = phaseOf(snapshot.value);
    if (next === phase) return;
    phase = next;
    if (phase !== 'admitting') upsertSearchAttributes([{ key: GenerationStatus, value: phase }]);
  };

  // Effects that move money never stop halfway, even when the workflow itself is cancelled.
  const drive = async (): Promise<void> => {
    for (;;) {
      for (const action of pending.splice(0)) {
        await CancellationScope.nonCancellable(() => perform(action));
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

  // A failed generation ends as a failed workflow, so an operator tells failures from successes in
  // the Temporal UI list; its error code is the failure message. Workflows started by the earlier
  // code completed in every case and must replay as they ran.
  const failure = finalFailure ?? (phase === 'failed' ? snapshot.context.error : null);
  if (input.admitted && failure) {
    if (finalFailure) {
      phase = 'failed';
      upsertSearchAttributes([{ key: GenerationStatus, value: 'failed' }]);
    }
    throw ApplicationFailure.create({ type: 'GenerationFailed', message: failure.code, nonRetryable: true, details: [failure] });
  }
  return { generationId: input.generationId, phase };
}
