import type { WorkflowStartOptions } from '@temporalio/client';
import { creditsText } from '../money';
import { AccountId, BatchId, GenerationKind, GenerationModel, GenerationStatus } from '../search-attributes';
import type { GenerationStatus as Status } from '../vocabulary';
import type { GenerationWorkflow, GenerationWorkflowInput } from '../workflow-contract';

/**
 * How a generation's workflow is started, whoever starts it: the API after admitting a request
 * (service/generation/temporal-gateway.ts) or a batch's workflow for each of its lines
 * (activities/batches/lines.ts). One id, one run, the same search attributes and fairness key.
 */

/**
 * A batch's lines wait behind the account's own requests: within one account the task queues hand
 * out priority 3 (the default, every request) before 4; across accounts the fairness key shares them.
 */
const BATCH_LINE_PRIORITY = 4;

/** The start options of a generation's workflow; `batchId` for a batch's line. */
export function generationStartOptions(
  input: GenerationWorkflowInput,
  taskQueue: string,
  batchId?: string,
): WorkflowStartOptions<GenerationWorkflow> {
  return {
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
      ...(batchId === undefined ? [] : [{ key: BatchId, value: batchId }]),
    ],
    staticSummary: summarise(input),
    staticDetails: detailsOf(input, batchId),
    // Where the server's fairness is on (matching.enableFairness), each account gets its share of
    // the task queues, activities included: one account's flood cannot starve another's request.
    // The weight is the account's plan's share (core/plans.ts), recorded at admission.
    priority: {
      fairnessKey: input.accountId,
      ...(input.internal.fairnessWeight === undefined ? {} : { fairnessWeight: input.internal.fairnessWeight }),
      ...(batchId === undefined ? {} : { priorityKey: BATCH_LINE_PRIORITY }),
    },
  };
}

/** The status a workflow starts with: what the ledger recorded for a reported chat, `running` when admitted so. */
function startStatusOf(input: GenerationWorkflowInput): Status {
  const reported = input.reported;
  if (reported !== undefined)
    return reported.recorded === 'settled' ? 'succeeded' : reported.recorded === 'released' ? 'failed' : 'running';
  return input.admittedRunning ? 'running' : 'queued';
}

/**
 * What a newcomer to the Temporal UI needs beside the summary (markdown): whose generation it is,
 * what its hold is, where its record is, and what an operator's action does to the money.
 */
export function detailsOf(input: GenerationWorkflowInput, batchId?: string): string {
  const price = input.admitted?.free
    ? 'a free reply: nothing is held or charged'
    : `${creditsText(input.quoteMc)} held at submit: charged when it succeeds (a per-token chat: what it produced), released when it fails`;
  return [
    `**Account** \`${input.accountId}\`${input.apiKeyId ? ` · key \`${input.apiKeyId}\`` : ''}${batchId ? ` · batch \`${batchId}\`` : ''}`,
    `**Money** ${price}.`,
    `**Record** \`GET /api/v1/generations/${input.generationId}\` · \`GET /admin/v1/generations/${input.generationId}/upstreams\` · PostgreSQL \`generations\`, \`holds\`, \`ledger_entries\` by this id.`,
    '**Operator actions** cancel releases the hold; terminate leaves it to the reconciler (released within minutes); reset never charges twice: docs/operator-actions.md.',
  ].join('\n\n');
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
      ? `up to ${creditsText(input.quoteMc)}, per token`
      : creditsText(input.quoteMc);
  return [input.kind, input.model, detail, price].filter((s) => s !== '').join(' · ');
}
