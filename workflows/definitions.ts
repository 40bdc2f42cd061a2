import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { GenerationPhase } from '../machines/generation';
import type { Kind } from '../core/catalogue';

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
  kind: Kind;
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
}

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
