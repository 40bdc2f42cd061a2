import { CancellationScope, sleep } from '@temporalio/workflow';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationRun } from './run';

/**
 * Nothing stays in flight forever (DESIGN §5): starts the workflow's one timer, unless the provider
 * activity keeps the deadline itself. Cancel the scope answered once the machine is done.
 */
export function startDeadline(run: GenerationRun): CancellationScope {
  const deadline = new CancellationScope();
  const ms = run.deadlineOnRun === undefined ? deadlineOf(run.input) : undefined;
  if (ms !== undefined) {
    deadline
      .run(() => sleep(ms))
      .then(
        () => void run.events.push({ type: 'DEADLINE', message: deadlineMessage(ms) }),
        () => undefined,
      );
  }
  return deadline;
}

/** The workflow's one timer: its deadline. */
function deadlineOf(input: GenerationWorkflowInput): number | undefined {
  // A reported chat has run already; should its ledger step be left to do, that step is bounded.
  return input.reported === undefined ? input.deadlineMs : undefined;
}

export const deadlineMessage = (ms: number): string =>
  `the generation did not finish within its deadline of ${deadlineText(ms)}`;

/** A deadline as its error message says it: a client's short one (`Cancel-After: 2`) in seconds. */
const deadlineText = (ms: number): string =>
  ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
