import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { GenerationPhase } from '../machines/generation';
import type { GenerationKind } from '../core/vocabulary';

/** Everything the API needs to start, ask and steer a generation workflow. */

export const GENERATION_WORKFLOW_TYPE = 'generation';

/**
 * Provider runs (rendering, uploads, calls to a model) have their own task queue beside the
 * workflows' one, so that a worker process serving workflow tasks never runs them on its event
 * loop unless it also serves this queue (docs/decisions.md, "Provider work on its own queue").
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
  params: Record<string, unknown>;
  quoteMc: number;
  /** Present when a free chat reply may be claimed instead of a hold; names the model that serves it. */
  freeChat?: { model: string };
  /**
   * Set when the API placed the hold before starting the workflow (every generation since API
   * admission; see docs/decisions.md). Absent in workflows started by earlier code, which place
   * the hold themselves: both paths replay.
   */
  admitted?: { free: boolean; model: string };
  /** After this long the generation fails with `timeout` and its hold is released (per kind, configured). */
  deadlineMs?: number;
  /**
   * Set when the API runs the provider itself and streams the reply to the client (group B chat):
   * the workflow does not run the provider activity but waits, up to `deadlineMs` after it starts
   * running, for the `apiRunResult` signal, then settles what it reports or releases. No signal by
   * the deadline (the API died mid-stream) releases the hold. Absent for every other generation.
   */
  apiRun?: { deadlineMs: number };
}

/** What the API reports about a generation it ran itself (see `apiRun`). */
export type ApiRunResult =
  | { ok: true; output: { outputKey: string | null; outputText: string | null; chargeMc: number; outputTokens: number } }
  | { ok: false; error: { code: string; message: string; retryable: boolean } };

export type Admission =
  | { admitted: true; free: boolean; model: string }
  | { admitted: false; requiredMc: number; availableMc: number };

export interface GenerationResult {
  generationId: string;
  phase: GenerationPhase;
}

/** Resolves as soon as the hold is placed or refused: the API answers 402 before anything runs. */
export const admissionUpdate = defineUpdate<Admission>('admission');
export const phaseQuery = defineQuery<GenerationPhase>('phase');
/** The admission once decided (also after the workflow closed): how a repeated request learns it. */
export const admissionQuery = defineQuery<Admission | null>('admission');
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

/** Send now: cuts a retry wait short, or (with signal-with-start) sends a finished delivery again. */
export const redeliverSignal = defineSignal('redeliver');
/** The outcome of a run the API did itself (`apiRun`); the first one counts. */
export const apiRunResultSignal = defineSignal<[ApiRunResult]>('apiRunResult');
