import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** What operators filter on in the Temporal UI; kept in step with the machine by the workflow. */
export const AccountId = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const GenerationKind = defineSearchAttributeKey('GenerationKind', SearchAttributeType.KEYWORD);
export const GenerationModel = defineSearchAttributeKey('GenerationModel', SearchAttributeType.KEYWORD);
export const GenerationStatus = defineSearchAttributeKey('GenerationStatus', SearchAttributeType.KEYWORD);

/** The configured upstream that served the run (absent: the simulator, or not run yet). */
export const GenerationProvider = defineSearchAttributeKey('GenerationProvider', SearchAttributeType.KEYWORD);

/**
 * A batch's workflow (type `batch`, id the batch id) and its lines' generation workflows carry the
 * batch id; the batch's own workflow also its status and line counts, kept in step as it runs.
 */
export const BatchId = defineSearchAttributeKey('BatchId', SearchAttributeType.KEYWORD);
export const BatchStatus = defineSearchAttributeKey('BatchStatus', SearchAttributeType.KEYWORD);
export const BatchLines = defineSearchAttributeKey('BatchLines', SearchAttributeType.INT);
export const BatchCompleted = defineSearchAttributeKey('BatchCompleted', SearchAttributeType.INT);
export const BatchFailed = defineSearchAttributeKey('BatchFailed', SearchAttributeType.INT);

export const BATCH_SEARCH_ATTRIBUTES = [BatchId, BatchStatus, BatchLines, BatchCompleted, BatchFailed] as const;

/** Every attribute the workflows set, registered at start-up (runtime/temporal-setup.ts). */
export const SEARCH_ATTRIBUTES = [
  AccountId,
  GenerationKind,
  GenerationModel,
  GenerationStatus,
  GenerationProvider,
  ...BATCH_SEARCH_ATTRIBUTES,
] as const;
