import { InvalidRequestError, UnknownCostError } from '../../../core/errors';
import { inDoorWords } from '../errors';

/**
 * OpenAI's words, shared by the doors that speak them: group B's routes and the batches whose
 * lines are group B requests (group B, group A, MCP, the dashboard read or make them).
 */

/** The shared request names fields as the service does; OpenAI's API spells them its way. */
export const GROUP_B_PARAMS: Record<string, string> = {
  imageUrl: 'image_url',
  inputFile: 'input_reference',
  maxTokens: 'max_tokens',
  responseFormat: 'response_format',
  kind: 'model',
  seconds: 'duration',
};

/** Group B has no `unknown_cost`: an id it does not know is a bad parameter, as with OpenAI. */
export function inGroupBWords<T>(work: () => Promise<T>, renames: Record<string, string> = GROUP_B_PARAMS): Promise<T> {
  return inDoorWords(renames, work, (err) =>
    err instanceof UnknownCostError
      ? new InvalidRequestError(err.message.replace('No price is defined for', 'Group B has no'), 'model')
      : undefined,
  );
}

/**
 * OpenAI answers an argument it does not know with a 400 that names it, rather than ignoring it;
 * so do we (zod would silently strip it). Throws for the first field of `body` not in `allowed`.
 */
export function assertKnownFields(body: unknown, allowed: readonly string[]): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const unknown = Object.keys(body).find((k) => !allowed.includes(k));
  if (unknown !== undefined)
    throw new InvalidRequestError(`Unrecognized request argument supplied: ${unknown}`, unknown);
}

/** Seconds since the epoch, as OpenAI's objects carry them. */
export const unixSeconds = (d: Date): number => Math.floor(d.getTime() / 1000);

/** What OpenAI's API says of a request argument it takes but this service does not serve. */
export const UNSUPPORTED = 'is not supported by this service';
