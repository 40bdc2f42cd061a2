import type { GenerationRow } from '../db/generations';
import type { AdmittedGeneration } from '../ledger';
import { SLOT_KINDS } from '../vocabulary';
import type { GenerationKind } from '../vocabulary';
import type { GenerationWorkflowInput } from '../workflow-contract';
import type { InternalParams } from './params';

/**
 * The one place a generation's workflow input is built, whoever starts the workflow: the API right
 * after admitting a request (from the priced generation), or anyone starting it again from its
 * record (an Idempotency-Key repeat, a cancel, a batch's lines). Both give a workflow the same
 * fields, so that its history replays whichever started it.
 */

/** Per kind, how long a generation may stay in flight before it fails with `timeout`. */
export type Deadlines = Partial<Record<GenerationKind, number>>;

/** A priced request: everything a generation workflow needs, before its hold is placed. */
export interface PricedGeneration extends Omit<GenerationWorkflowInput, 'admitted'> {
  /** A free chat reply may be claimed instead of a hold while the account has some; names the model that serves it. */
  freeChat?: { model: string };
  /** A hold its caller resolves itself within this many ms, with no workflow until then (core/ledger/admit.ts). */
  resolveWithinMs?: number;
}

/** The workflow's deadline: the sooner of the kind's own and the one the client asked for, if any. */
function deadlineOf(
  kind: GenerationKind,
  internal: InternalParams,
  deadlines: Deadlines | undefined,
): number | undefined {
  const own = deadlines?.[kind];
  const asked = internal.clientDeadlineMs;
  if (asked === undefined) return own;
  return own === undefined ? asked : Math.min(own, asked);
}

/** The workflow input of a generation the ledger just admitted. */
export function inputOfAdmitted(
  priced: PricedGeneration,
  admitted: AdmittedGeneration,
  deadlines: Deadlines | undefined,
): GenerationWorkflowInput {
  const { freeChat: _freeChat, resolveWithinMs: _resolveWithinMs, ...rest } = priced;
  const deadlineMs = deadlineOf(priced.kind, priced.internal, deadlines);
  return {
    ...rest,
    model: admitted.model,
    admitted: { free: admitted.free, model: admitted.model },
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
  };
}

/** Everything a generation's workflow needs, rebuilt from its record (Idempotency-Key repeats, cancels, a batch's lines). */
export function inputOfRecord(g: GenerationRow, deadlines: Deadlines | undefined): GenerationWorkflowInput {
  const deadlineMs = deadlineOf(g.kind, g.internal, deadlines);
  // Running with no slot to hold: it was admitted so, and its workflow starts it no further.
  const admittedRunning = g.status === 'running' && !SLOT_KINDS.has(g.kind);
  return {
    ...(admittedRunning ? { admittedRunning } : {}),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    generationId: g.id,
    accountId: g.accountId,
    apiKeyId: g.apiKeyId,
    kind: g.kind,
    model: g.model,
    prompt: g.prompt,
    params: g.params,
    internal: g.internal,
    quoteMc: g.quoteMc,
    admitted: { free: g.freeChat, model: g.model },
  };
}

/**
 * A chat the API runs and records itself (a group B reply): the API resolves its hold and starts its
 * workflow at its end, so none is started for it from its record.
 */
export const isRecordedByApi = (g: GenerationRow): boolean => g.internal.recordedByApi === true;
