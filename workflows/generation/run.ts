import type { CancellationScope } from '@temporalio/workflow';
import type { GenerationActivities } from '../../activities';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationFailure } from '../../core/vocabulary';
import type { GenerationEvent } from '../../machines/generation';

/** What the steps of one generation's workflow share: its input, and what it learns on the way. */
export interface GenerationRun {
  readonly input: GenerationWorkflowInput;
  /** The provider's activities, bounded by `deadlineOnRun` when it is set. */
  readonly provider: GenerationActivities;
  /** The same, run in place (a local activity) when the worker has a provider permit free. */
  readonly inPlace: GenerationActivities;
  /**
   * Admitted running and needing no slot, a generation's run is all that is left of its deadline:
   * the provider activity's schedule-to-close timeout keeps it, and no timer is started.
   */
  readonly deadlineOnRun: number | undefined;
  /** What happened, for the machine, in the order it happened. */
  readonly events: GenerationEvent[];
  /** Long work under way beside the event loop, which a cancel stops. */
  readonly background: CancellationScope[];
  /** Clean-ups a stopped run left under way (an upstream job to cancel): the workflow ends after them. */
  readonly compensations: Promise<unknown>[];
}

/** A settle that found the hold released (the API's or the reconciler's doing): nothing was charged. */
export const RELEASED_BEFORE_SETTLE: GenerationFailure = {
  code: 'not_started',
  message: 'the hold was released before the run finished',
  retryable: true,
};
