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
  const { freeChat: _freeChat, ...rest } = priced;
  const deadlineMs = deadlineOf(priced.kind, priced.internal, deadlines);
  return {
    ...rest,
    model: admitted.model,
    admitted: { free: admitted.free, model: admitted.model },
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
  };
}

/** A chat the API runs itself (a group B reply): its workflow waits for the API's report. */
export const isApiRun = (g: GenerationRow): boolean => g.internal.apiRunDeadlineMs !== undefined;

export { inputOfRecord } from '../../core/generation/workflow-start';
export type { Deadlines } from '../../core/generation/workflow-start';
