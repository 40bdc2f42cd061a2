import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Client } from '@temporalio/client';
import { AccountId, GenerationKind, GenerationModel, GenerationStatus } from '../core/search-attributes';
import { mcToCredits } from '../core/money';
import type { generation } from '../workflows/generation';
import { admissionQuery, admissionUpdate, cancelSignal, GENERATION_WORKFLOW_TYPE } from '../workflows/definitions';
import { ServiceUnavailableError } from '../core/errors';
import type { Admission, GenerationWorkflowInput } from '../workflows/definitions';

/** How the API talks to Temporal about generations: start one, learn its admission, await its end. */
export function createGenerationGateway({ client, taskQueue, admissionTimeoutMs }: { client: Client; taskQueue: string; admissionTimeoutMs: number }) {
  return {
    /**
     * Starts the workflow and waits, in the same call, for the hold to be placed or refused
     * (update-with-start), so a 402 is answered before anything runs. A repeated request (same
     * Idempotency-Key, so the same generation id) attaches to the running workflow, or reads the
     * admission of the finished one: a generation id never gets a second run, so never a second hold.
     */
    async submit(input: GenerationWorkflowInput): Promise<Admission> {
      const start = new WithStartWorkflowOperation<typeof generation>(GENERATION_WORKFLOW_TYPE, {
        workflowId: input.generationId,
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        typedSearchAttributes: [
          { key: AccountId, value: input.accountId },
          { key: GenerationKind, value: input.kind },
          { key: GenerationModel, value: input.model },
          { key: GenerationStatus, value: 'admitting' },
        ],
        staticSummary: summarise(input),
      });
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), admissionTimeoutMs);
      try {
        return await client.withAbortSignal(controller.signal, () =>
          client.workflow.executeUpdateWithStart(admissionUpdate, { startWorkflowOperation: start }),
        );
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) {
          const decided = await client.workflow.getHandle(input.generationId).query(admissionQuery);
          if (decided) return decided;
        }
        if (!controller.signal.aborted) throw err;
        // The client is told it failed, so the job must not go on to charge: once the hold is
        // placed (if it ever is), the machine sees the cancel and releases it.
        await client.workflow.getHandle(input.generationId).signal(cancelSignal, 'admission timed out').catch(() => undefined);
        throw new ServiceUnavailableError('The service could not place the hold in time; nothing was charged. Retry shortly.');
      } finally {
        clearTimeout(timer);
      }
    },

    /** Waits up to `ms` for the workflow to finish; false when it is still going. */
    async awaitFinish(generationId: string, ms: number): Promise<boolean> {
      if (ms <= 0) return false;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ms);
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
      }
    },
  };
}

export type GenerationGateway = ReturnType<typeof createGenerationGateway>;

/** The line an operator reads in the Temporal UI, e.g. "video · kling · 10 s 1080p · 130 credits". */
export function summarise(input: GenerationWorkflowInput): string {
  const p = input.params;
  const detail =
    input.kind === 'video' ? `${String(p.seconds)} s ${String(p.resolution)}`
      : input.kind === 'image' ? `${String(p.width)}×${String(p.height)}`
        : '';
  const price = input.freeChat ? `${mcToCredits(input.quoteMc)} credits or free reply` : `${mcToCredits(input.quoteMc)} credits`;
  return [input.kind, input.model, detail, price].filter((s) => s !== '').join(' · ');
}
