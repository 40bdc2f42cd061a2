import { DomainError } from '../../../core/errors';

/**
 * Anthropic's error body, `{ type: "error", error: { type, message }, request_id }`, with the error
 * types of Anthropic's SDK for our statuses (too little money is its 402 `billing_error`; a body too
 * large, which the SDK's types give no type of its own, an `invalid_request_error`). The Anthropic
 * door answers with it, and a Message Batch's errored results carry it.
 */

/** Anthropic's error types, by status; `api_error` for any other 5xx. */
const TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  504: 'timeout_error',
};

export const anthropicTypeOf = (status: number): string =>
  TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

export function anthropicError(status: number, message: string, requestId: string | null) {
  return { type: 'error' as const, error: { type: anthropicTypeOf(status), message }, request_id: requestId };
}

/** A failure as the body Anthropic's clients read (in a stream too, as the `error` event's data). A 5xx never shows its internal message. */
export function anthropicErrorOf(err: unknown, requestId: string | null) {
  if (err instanceof DomainError) return anthropicError(err.status, err.message, requestId);
  return anthropicError(500, 'Internal error; retry shortly.', requestId);
}
