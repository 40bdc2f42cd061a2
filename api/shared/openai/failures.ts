import { ProviderFailedError } from '../../../core/errors';
import type { GenerationFailure } from '../../../core/vocabulary';

/**
 * What group B answers for a run that failed (nothing charged): a repeat of a failed chat or
 * response, an image request none of whose images was made, and a batch's line whose run failed
 * (its error file carries the same answer).
 */
export function failedRunError(
  what: 'reply' | 'response' | 'image' | 'video',
  e: GenerationFailure | null | undefined,
): ProviderFailedError {
  const why = `(${e?.code ?? 'failed'}): ${e?.message ?? ''}`;
  return new ProviderFailedError(
    what === 'image' || what === 'video'
      ? `The ${what} could not be generated ${why} Nothing was charged.`
      : `The ${what} failed ${why} Nothing was charged.`,
  );
}
