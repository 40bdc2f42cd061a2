import {
  ActivityFailure,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { LocalActivityOptions } from '@temporalio/workflow';
import type { GenerationActivities } from '../../activities';
import { providerTaskQueueOf } from '../../core/workflow-contract';
import type { GenerationKind } from '../../core/vocabulary';

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
export const ledgerStep = (summary: string) =>
  proxyLocalActivities<GenerationActivities>({ ...LEDGER_OPTIONS, summary });

// A video's slot wait holds no worker slot (activities/generation/slots.ts): each attempt claims or parks its
// task token and completes asynchronously, and whoever frees a slot of the account completes it.
// The attempt's timeout is only the safety poll, for a wake that was lost; the retry is the next
// look, and the generation's deadline bounds the whole wait.
export const slots = proxyActivities<GenerationActivities>({
  summary: "wait for one of the account's video slots (the hold stays held)",
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 1, nonRetryableErrorTypes: ['LedgerPermanentError'] },
});

/** A video's first look for a free slot, inside its workflow task: one attempt; `slots` waits when none is free. */
export const slotInPlace = proxyLocalActivities<GenerationActivities>({
  summary: 'look for a free video slot of the account (the hold stays held)',
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

const runTimeouts = (kind: GenerationKind, deadlineMs: number | undefined) => ({
  startToCloseTimeout: kind === 'video' || kind === 'upscale' ? '1 hour' : '10 minutes',
  ...(deadlineMs === undefined ? {} : { scheduleToCloseTimeout: deadlineMs }),
});

/** A worker restart mid-job costs an attempt too, so a run gets a few in all, in place or from the queue. */
export const RUN_ATTEMPTS = 5;

/**
 * `deadlineMs`: the run is the generation's deadline (nothing to wait for before it), so all its
 * attempts end by then. `attempts`: fewer than RUN_ATTEMPTS when one was spent in place.
 */
export function providerActivities(
  kind: GenerationKind,
  summary: string,
  deadlineMs?: number,
  attempts = RUN_ATTEMPTS,
): GenerationActivities {
  return proxyActivities<GenerationActivities>({
    summary,
    taskQueue: providerTaskQueueOf(workflowInfo().taskQueue),
    ...runTimeouts(kind, deadlineMs),
    heartbeatTimeout: '10 seconds',
    retry: {
      initialInterval: '1 second',
      maximumAttempts: attempts,
      nonRetryableErrorTypes: ['ProviderRejectedError'],
    },
  });
}

/**
 * The provider run in place: a local activity of this workflow's worker, when one of its provider
 * permits is free (activities/generation/provider.ts). One attempt: a transient failure goes on as
 * the queue's run, which has the retries (docs/decisions/0143-provider-runs-in-place.md).
 */
export function providerInPlace(kind: GenerationKind, summary: string, deadlineMs?: number): GenerationActivities {
  return proxyLocalActivities<GenerationActivities>({
    summary: `${summary}, in place`,
    ...runTimeouts(kind, deadlineMs),
    retry: { maximumAttempts: 1 },
  });
}

/** The provider's run ended because the generation's deadline passed (its schedule-to-close timeout). */
export const pastDeadline = (err: unknown): boolean => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE';
};
