import type { GenerationRow } from '../../core/db/generations';
import type { AdmittedGeneration } from '../../core/ledger';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import { deadlineOf } from '../../core/generation/workflow-start';
import type { Deadlines } from '../../core/generation/workflow-start';
import type { PricedGeneration } from './requests';

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

/** A chat the API runs itself (a group B reply): the API resolves its hold and starts its workflow at its end. */
export const isApiRun = (g: GenerationRow): boolean =>
  g.internal.recordedByApi === true || g.internal.apiRunDeadlineMs !== undefined;

/** A chat the API records at its end: no workflow until then, and none to start for it from its record. */
export const isRecordedByApi = (g: GenerationRow): boolean => g.internal.recordedByApi === true;

export { inputOfRecord } from '../../core/generation/workflow-start';
export type { Deadlines } from '../../core/generation/workflow-start';
