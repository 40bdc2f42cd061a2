import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** What operators filter on in the Temporal UI; kept in step with the machine by the workflow. */
export const AccountId = defineSearchAttributeKey('AccountId', SearchAttributeType.KEYWORD);
export const GenerationKind = defineSearchAttributeKey('GenerationKind', SearchAttributeType.KEYWORD);
export const GenerationModel = defineSearchAttributeKey('GenerationModel', SearchAttributeType.KEYWORD);
export const GenerationStatus = defineSearchAttributeKey('GenerationStatus', SearchAttributeType.KEYWORD);

/** The configured upstream that served the run (absent: the simulator, or not run yet). */
export const GenerationProvider = defineSearchAttributeKey('GenerationProvider', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [
  AccountId,
  GenerationKind,
  GenerationModel,
  GenerationStatus,
  GenerationProvider,
] as const;
