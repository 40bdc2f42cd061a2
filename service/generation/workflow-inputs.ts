import type { GenerationRow } from '../../core/db/generations';
import type { AdmittedGeneration } from '../../core/ledger';
import type { GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationKind } from '../../core/vocabulary';
import type { PricedGeneration } from './requests';

/** Per kind, how long a generation may stay in flight before it fails with `timeout`. */
export type Deadlines = Partial<Record<GenerationKind, number>>;

/** The params key of the client's own deadline in ms (`Cancel-After`, `deadline_seconds`); not shown to clients. */
export const CLIENT_DEADLINE_PARAM = 'clientDeadlineMs';

/** The workflow's deadline: the sooner of the kind's own and the one the client asked for, if any. */
function deadlineOf(kind: GenerationKind, params: Record<string, unknown>, deadlines: Deadlines | undefined): number | undefined {
  const own = deadlines?.[kind];
  const asked = params[CLIENT_DEADLINE_PARAM];
  if (typeof asked !== 'number') return own;
  return own === undefined ? asked : Math.min(own, asked);
}

/** The workflow input of a generation the ledger just admitted. */
export function inputOfAdmitted(priced: PricedGeneration, admitted: AdmittedGeneration, deadlines: Deadlines | undefined): GenerationWorkflowInput {
  const { freeChat: _freeChat, ...rest } = priced;
  const deadlineMs = deadlineOf(priced.kind, priced.params, deadlines);
  return {
    ...rest,
    model: admitted.model,
    admitted: { free: admitted.free, model: admitted.model },
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
  };
}

/** Everything a generation's workflow needs, rebuilt from its record (replays, cancels). */
export function inputOfRecord(g: GenerationRow, deadlines: Deadlines | undefined): GenerationWorkflowInput {
  const deadlineMs = deadlineOf(g.kind, g.params, deadlines);
  return {
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    generationId: g.id,
    accountId: g.accountId,
    apiKeyId: g.apiKeyId,
    kind: g.kind,
    model: g.model,
    prompt: g.prompt,
    params: g.params,
    quoteMc: g.quoteMc,
    admitted: { free: g.freeChat, model: g.model },
    // A chat the API runs itself stays one: its workflow waits for the API's report.
    ...(isApiRun(g) ? { apiRun: { deadlineMs: g.params.apiRunDeadlineMs } } : {}),
  };
}

/** A chat the API runs itself (a group B reply): its workflow waits for the API's report. */
export function isApiRun(g: GenerationRow): g is GenerationRow & { params: { apiRunDeadlineMs: number } } {
  return typeof g.params.apiRunDeadlineMs === 'number';
}
