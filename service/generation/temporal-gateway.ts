import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { ServiceUnavailableError } from '../../core/errors';
import { createAccountLanes } from '../../core/generation/account-lanes';
import { generationStartOptions } from '../../core/generation/workflow-start';
import { cancelSignal, GENERATION_WORKFLOW_TYPE } from '../../core/workflow-contract';
import type { ApiRunResult, GenerationWorkflow, GenerationWorkflowInput } from '../../core/workflow-contract';

/** The signals the API sends a generation's workflow. */
type GenerationSignal = { signal: typeof cancelSignal; signalArgs: [reason: string] };

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
  const startOptions = (input: GenerationWorkflowInput) => generationStartOptions(input, taskQueue);
  // A delayed workflow exists at once but takes its first task later; its deadline still counts
  // from the submit, so the delay comes off it (and never takes more than half of it).
  const delayedStartOptions = (input: GenerationWorkflowInput, delayMs: number) => {
    const delay = Math.min(delayMs, input.deadlineMs === undefined ? delayMs : Math.floor(input.deadlineMs / 2));
    if (delay <= 0) return startOptions(input);
    const deadlineMs = input.deadlineMs === undefined ? undefined : input.deadlineMs - delay;
    return { ...startOptions(deadlineMs === undefined ? input : { ...input, deadlineMs }), startDelay: delay };
  };
  // The server takes starts one at a time per history shard: one account's burst of starts waits
  // in its own lane rather than in front of every other account's.
  const lanes = createAccountLanes();

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
     * `delayMs` puts off its first task (service/generation/start-pace.ts).
     */
    async start(input: GenerationWorkflowInput, delayMs = 0): Promise<void> {
      try {
        await lanes.through(input.accountId, () =>
          client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
            client.workflow.start<GenerationWorkflow>(GENERATION_WORKFLOW_TYPE, delayedStartOptions(input, delayMs)),
          ),
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
     * Starts the workflow of a chat the API ran, carrying what it came to (`input.reported`): it
     * records that in its first task. One that already has its workflow (an earlier attempt's start
     * reached the server) is left as it is. Throws when the server cannot be reached.
     */
    async record(input: GenerationWorkflowInput & { reported: ApiRunResult }): Promise<void> {
      try {
        await lanes.through(input.accountId, () =>
          client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
            client.workflow.start<GenerationWorkflow>(GENERATION_WORKFLOW_TYPE, startOptions(input)),
          ),
        );
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
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
