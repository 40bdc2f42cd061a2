import { condition, defineQuery, defineUpdate, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { LegacyHoldOutcome, LegacyHoldRequest } from '../../activities/generation/ledger';
import { GenerationModel } from '../../core/search-attributes';
import type { LegacyWorkflowInput } from '../../core/workflow-contract';

/**
 * Replay only: workflows started before the API admitted in PostgreSQL placed their own hold,
 * and their API waited for it through the `admission` update. Nothing starts such a workflow any
 * more (every input now carries `admitted`); this path exists so that one still open replays as
 * it ran. Delete it, with the fixtures `*-succeeded.json`, `*-failed.json`, `video-failed-cancelled.json`
 * and `refused.json` (the ones without `-api-admitted`), once no open workflow lacks `admitted`
 * in its input: every kind has a deadline and the reconciler cancels what overstays it, so one
 * deadline after the release that started admitting in the API.
 */

type LegacyAdmission =
  | { admitted: true; free: boolean; model: string }
  | { admitted: false; requiredMc: number; availableMc: number };

const admissionUpdate = defineUpdate<LegacyAdmission>('admission');
const admissionQuery = defineQuery<LegacyAdmission | null>('admission');

/** Places the hold as these workflows did, answering their `admission` update. */
export async function admitLegacy(
  input: LegacyWorkflowInput,
  placeHold: (req: LegacyHoldRequest) => Promise<LegacyHoldOutcome>,
): Promise<LegacyAdmission> {
  let admission: LegacyAdmission | undefined = undefined;
  setHandler(admissionUpdate, async () => {
    await condition(() => admission !== undefined);
    return admission!;
  });
  setHandler(admissionQuery, () => admission ?? null);
  const outcome = await placeHold({
    generation: { id: input.generationId, accountId: input.accountId, apiKeyId: input.apiKeyId, kind: input.kind, model: input.model, params: input.params, prompt: input.prompt },
    amountMc: input.quoteMc,
    ...(input.freeChat ? { freeChat: input.freeChat } : {}),
  });
  admission = outcome.admitted
    ? { admitted: true, free: outcome.free, model: outcome.model }
    : { admitted: false, requiredMc: outcome.requiredMc, availableMc: outcome.availableMc };
  if (outcome.admitted && outcome.model !== input.model) upsertSearchAttributes([{ key: GenerationModel, value: outcome.model }]);
  return admission;
}

