import { CancellationScope, sleep } from '@temporalio/workflow';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationEvent } from '../../machines/generation';
import type { GenerationRun } from './run';

/**
 * Nothing stays in flight forever (DESIGN §5): starts the workflow's one timer, unless the provider
 * activity keeps the deadline itself. Cancel the scope answered once the machine is done.
 */
export function startDeadline(run: GenerationRun): CancellationScope {
  const deadline = new CancellationScope();
  const timeout = run.deadlineOnRun === undefined ? deadlineOf(run.input) : undefined;
  if (timeout !== undefined) {
    deadline
      .run(() => sleep(timeout.ms))
      .then(
        () => {
          // The report's wait ran out first: the API died mid-stream, the hold goes back.
          if (timeout.reportWait) {
            if (run.apiRunResult === undefined) run.events.push(reportMissing(timeout.ms));
          } else {
            run.events.push({ type: 'DEADLINE', message: deadlineMessage(timeout.ms) });
          }
        },
        () => undefined,
      );
  }
  return deadline;
}

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

export const deadlineMessage = (ms: number): string =>
  `the generation did not finish within its deadline of ${deadlineText(ms)}`;

/** A deadline as its error message says it: a client's short one (`Cancel-After: 2`) in seconds. */
const deadlineText = (ms: number): string =>
  ms < 120_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
