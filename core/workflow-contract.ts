import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { InternalParams, PublicParams } from './generation/params';
import type { GenerationFailure, GenerationKind, GenerationStatus, RunOutput } from './vocabulary';

/**
 * The contract between the service and the workflows it starts: workflow types, inputs, results,
 * signals and queries. Imported by both sides (and by activities that signal), so it stays free
 * of anything but Temporal's definitions and the vocabulary.
 */

export const GENERATION_WORKFLOW_TYPE = 'generation';

/**
 * Provider runs (rendering, uploads, calls to a model) have their own task queue beside the
 * workflows' one, so that a worker process serving workflow tasks never runs them on its event
 * loop unless it also serves this queue (docs/decisions/0017-provider-task-queue.md).
 */
export function providerTaskQueueOf(taskQueue: string): string {
  return `${taskQueue}-provider`;
}

export interface GenerationWorkflowInput {
  generationId: string;
  accountId: string;
  apiKeyId: string | null;
  kind: GenerationKind;
  model: string;
  prompt: string;
  params: PublicParams;
  internal: InternalParams;
  quoteMc: number;
  /** The admission the API made before starting the workflow: a free reply, and the model that serves it. */
  admitted: { free: boolean; model: string };
  /** After this long the generation fails with `timeout` and its hold is released (per kind, configured). */
  deadlineMs?: number;
  /**
   * A chat the API ran itself (group B), started once its reply has ended: what it came to, and
   * where the API's own ledger call left the hold. The workflow records it in its first task, with
   * no timer and no activity, unless the API could not reach the ledger: then it settles or releases
   * from this. An API that dies before the end starts no workflow; the hold's deadline in the ledger
   * and the reconciler release its hold (docs/decisions/0090-chat-recorded-at-its-end.md).
   */
  reported?: ApiRunResult;
  /**
   * The API admitted it `running` (core/ledger/admit.ts) and started the workflow with that status:
   * the workflow records nothing to start it. A generation that needs no slot then has nothing to
   * wait for before its run, so the provider activity's own schedule-to-close timeout is its
   * deadline, with no timer of its own.
   */
  admittedRunning?: boolean;
}

/** What the API reports about a chat it ran itself (see `reported`). */
export type ApiRunResult = (
  { ok: true; output: RunOutput & { chargeMc: number; outputTokens: number } } | { ok: false; error: GenerationFailure }
) & {
  /**
   * Where the API's own ledger call left the hold, when it reached the ledger: the workflow then
   * records that outcome without a ledger activity of its own. Absent: the workflow settles or
   * releases from the report itself.
   */
  recorded?: 'settled' | 'released';
};

export interface GenerationResult {
  generationId: string;
  /** Where the generation ended (a failed one fails the workflow instead of returning). */
  phase: GenerationStatus;
}

/** The signature of the `generation` workflow, for typed starts without importing workflow code. */
export type GenerationWorkflow = (input: GenerationWorkflowInput) => Promise<GenerationResult>;

export const phaseQuery = defineQuery<GenerationStatus>('phase');
export const cancelSignal = defineSignal<[reason: string]>('cancel');

export const WEBHOOK_DELIVERY_WORKFLOW_TYPE = 'webhookDelivery';

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** Waits after each failure; the production schedule (core/webhooks/schedule.ts) when absent. */
  retryScheduleMs?: number[];
}

export interface WebhookDeliveryResult {
  deliveryId: string;
  outcome: 'delivered' | 'failed' | 'stopped' | 'retry';
}

/** The signature of the `webhookDelivery` workflow. */
export type WebhookDeliveryWorkflow = (input: WebhookDeliveryInput) => Promise<WebhookDeliveryResult>;

/** Send now: cuts a retry wait short, or (with signal-with-start) sends a finished delivery again. */
export const redeliverSignal = defineSignal('redeliver');

export const BATCH_WORKFLOW_TYPE = 'batch';

export interface BatchWorkflowInput {
  batchId: string;
  accountId: string;
  /** What its lines make: a video batch has no more lines in flight than the account has video slots. */
  kind: GenerationKind;
  /** When the completion window ends (epoch ms): lines not finished by then are stopped, the batch expires. */
  expiresAtMs: number;
  /** Lines started so far by earlier runs (continue-as-new carries it; shown in the UI's details). */
  startedBefore?: number;
}

/** Where a batch ended. */
export interface BatchResult {
  batchId: string;
  status: 'completed' | 'cancelled' | 'expired' | 'failed';
}

/** The signature of the `batch` workflow. */
export type BatchWorkflow = (input: BatchWorkflowInput) => Promise<BatchResult>;

/** A line of the batch ended (or something else changed): look again now rather than at the next poll. */
export const batchWakeSignal = defineSignal('batchWake');
/** Stop the batch: its lines still running are cancelled, what they hold released; it ends `cancelled`. */
export const batchCancelSignal = defineSignal<[reason: string]>('batchCancel');
