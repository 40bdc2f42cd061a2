import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client, WorkflowStartOptions } from '@temporalio/client';
import { AccountId, GenerationKind, GenerationModel, GenerationStatus } from '../../core/search-attributes';
import { ServiceUnavailableError } from '../../core/errors';
import { mcToCredits } from '../../core/money';
import { apiRunResultSignal, cancelSignal, GENERATION_WORKFLOW_TYPE } from '../../core/workflow-contract';
import type { ApiRunResult, GenerationWorkflow, GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationStatus as Status } from '../../core/vocabulary';

/** The signals the API sends a generation's workflow. */
type GenerationSignal =
  | { signal: typeof cancelSignal; signalArgs: [reason: string] }
  | { signal: typeof apiRunResultSignal; signalArgs: [result: ApiRunResult] };

/**
 * How the service talks to Temporal about generations. The hold is already placed (by the
 * service, in PostgreSQL) when a workflow starts, so starting one is a single request to the
 * server that no worker has to answer: the workflow then owns settle-or-release.
 */
/**
 * A start is one request that normally takes milliseconds; past this the client is answered 503
 * rather than kept waiting while the SDK retries an unreachable server.
 */
const START_DEADLINE_MS = 5_000;

export function createGenerationGateway({ client, taskQueue }: { client: Client; taskQueue: string }) {
  const startOptions = (input: GenerationWorkflowInput): WorkflowStartOptions<GenerationWorkflow> => ({
    workflowId: input.generationId,
    taskQueue,
    args: [input],
    // One generation id, one run, ever: a repeated start (an idempotent retry, a cancel racing the
    // start) joins the running workflow or is refused for a closed one, never runs the job twice.
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: AccountId, value: input.accountId },
      { key: GenerationKind, value: input.kind },
      { key: GenerationModel, value: input.model },
      // Known at the start, the status is given with it: the workflow then writes none until its end
      // (a reported chat: none at all).
      { key: GenerationStatus, value: startStatusOf(input) },
    ],
    staticSummary: summarise(input),
    // Where the server's fairness is on (matching.enableFairness), each account gets its share of
    // the task queues, activities included: one account's flood cannot starve another's request.
    priority: { fairnessKey: input.accountId },
  });

  /** Signals the generation's workflow, starting it first if it never started; false when it has closed. */
  const signalWithStart = async (input: GenerationWorkflowInput, signal: GenerationSignal): Promise<boolean> => {
    try {
      await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        client.workflow.signalWithStart<GenerationWorkflow, GenerationSignal['signalArgs']>(GENERATION_WORKFLOW_TYPE, {
          ...startOptions(input),
          ...signal,
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
      throw err;
    }
  };

  return {
    /**
     * Starts the workflow of an admitted generation; a generation that already has one is left as it
     * is. A server that cannot be reached is a ServiceUnavailableError (503), like a cancel's.
     */
    async start(input: GenerationWorkflowInput): Promise<void> {
      try {
        await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
          client.workflow.start<GenerationWorkflow>(GENERATION_WORKFLOW_TYPE, startOptions(input)),
        );
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        throw new ServiceUnavailableError('The workflow service could not be reached; retry shortly.', { cause: err });
      }
    },

    /**
     * Asks the generation to stop. Signal-with-start, so that a generation whose workflow never
     * started (its API process died right after placing the hold) gets one that sees the cancel
     * first and releases the hold: exactly one workflow, hence exactly one release.
     * False when the workflow has already closed.
     */
    async cancel(input: GenerationWorkflowInput, reason: string): Promise<boolean> {
      try {
        return await signalWithStart(input, { signal: cancelSignal, signalArgs: [reason] });
      } catch (err) {
        throw new ServiceUnavailableError(
          'The cancel could not reach the workflow service; nothing changed. Retry shortly.',
          { cause: err },
        );
      }
    },

    /**
     * Hands the outcome of a run the API did itself (a streamed chat) to its workflow, which then
     * settles or releases. Signal-with-start, so that a workflow whose first start failed is
     * started now. Throws when the server cannot be reached: the caller then resolves the hold.
     */
    async reportApiRun(input: GenerationWorkflowInput, result: ApiRunResult): Promise<void> {
      // False when already closed (e.g. cancelled meanwhile): it settled or released without this report.
      await signalWithStart(input, { signal: apiRunResultSignal, signalArgs: [result] });
    },

    /**
     * Starts the workflow of a chat the API ran, carrying what it came to (`input.reported`): it
     * records that in its first task. A workflow of the earlier shape already waiting for this
     * chat's report (started by an older API process) is sent the report instead. Throws when the
     * server cannot be reached.
     */
    async record(input: GenerationWorkflowInput & { reported: ApiRunResult }): Promise<void> {
      try {
        await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
          client.workflow.start<GenerationWorkflow>(GENERATION_WORKFLOW_TYPE, startOptions(input)),
        );
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        try {
          await client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
            client.workflow.getHandle(input.generationId).signal(apiRunResultSignal, input.reported),
          );
        } catch (signalErr) {
          // Closed already (released at its own deadline): the ledger has the outcome either way.
          if (!(signalErr instanceof WorkflowNotFoundError)) throw signalErr;
        }
      }
    },

    /**
     * Waits up to `ms` for the workflow to finish; false when it is still going. `signal` ends the
     * wait early (the caller went away).
     */
    async awaitFinish(generationId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
      if (ms <= 0 || signal?.aborted) return false;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ms);
      const stop = () => controller.abort();
      signal?.addEventListener('abort', stop, { once: true });
      try {
        await client.withAbortSignal(controller.signal, () => client.workflow.getHandle(generationId).result());
        return true;
      } catch (err) {
        if (controller.signal.aborted) return false;
        if (err instanceof WorkflowNotFoundError) return false;
        // The workflow failing is an outcome, not an API error: the record says what happened.
        return true;
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', stop);
      }
    },
  };
}

export type GenerationGateway = ReturnType<typeof createGenerationGateway>;

/** The status a workflow starts with: what the ledger recorded for a reported chat, `running` when admitted so. */
function startStatusOf(input: GenerationWorkflowInput): Status {
  const reported = input.reported;
  if (reported !== undefined)
    return reported.recorded === 'settled' ? 'succeeded' : reported.recorded === 'released' ? 'failed' : 'running';
  return input.apiRun?.admittedRunning || input.admittedRunning ? 'running' : 'queued';
}

/** The line an operator reads in the Temporal UI, e.g. "video · kling · 10 s 1080p · 130 credits". */
export function summarise(input: GenerationWorkflowInput): string {
  const p = input.params;
  const detail =
    input.kind === 'video'
      ? `${String(p.seconds)} s ${String(p.resolution)}`
      : input.kind === 'image'
        ? `${String(p.width)}×${String(p.height)}`
        : input.kind === 'upscale'
          ? `${String(p.scale)}×`
          : '';
  const free = input.admitted?.free ?? false;
  // Per-token chat holds its output cap; what it charges is known at the end.
  const perToken = input.internal.ratePer1kMc !== undefined;
  const price = free
    ? 'free reply'
    : perToken
      ? `up to ${mcToCredits(input.quoteMc)} credits, per token`
      : `${mcToCredits(input.quoteMc)} credits`;
  return [input.kind, input.model, detail, price].filter((s) => s !== '').join(' · ');
}
