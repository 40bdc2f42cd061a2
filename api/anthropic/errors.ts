import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DomainError, isAfterAdmission } from '../../core/errors';
import { domainErrorOf, errorHeaders } from '../shared/errors';

/**
 * The Anthropic door's one error mapper: every failure in Anthropic's shape,
 * `{ type: "error", error: { type, message }, request_id }`, with the error types of Anthropic's
 * SDK for our statuses (too little money is its 402 `billing_error`; a body too large, which the
 * SDK's types give no type of its own, an `invalid_request_error`). Headers are every door's: `retry-after`,
 * `retry-after-ms`, `x-should-retry: false` after admission. A 5xx never shows its internal message.
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

/** As Anthropic's API does, a body over the limit is refused by its size, before anything in it is judged. */
const TOO_LARGE = '; the body is over 8 MB, refused by its size before it is read, whatever it holds';

export const anthropicTypeOf = (status: number): string =>
  TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

export function anthropicError(status: number, message: string, requestId: string) {
  return { type: 'error' as const, error: { type: anthropicTypeOf(status), message }, request_id: requestId };
}

/** A failure as the body Anthropic's clients read (in a stream too, as the `error` event's data). */
export function anthropicErrorOf(err: unknown, requestId: string) {
  if (err instanceof DomainError) return anthropicError(err.status, err.message, requestId);
  return anthropicError(500, 'Internal error; retry shortly.', requestId);
}

export function installAnthropicErrors(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    const known = domainErrorOf(err, request);
    if (!known) {
      if (isAfterAdmission(err)) reply.header('x-should-retry', 'false');
      return reply.code(500).send(anthropicError(500, 'Internal error; retry shortly.', request.id));
    }
    errorHeaders(reply, known);
    return reply.code(known.status).send(anthropicError(known.status, known.message, request.id));
  });
}

export const anthropicErrorSchema = z
  .object({
    type: z.literal('error'),
    error: z.object({
      type: z
        .string()
        .describe(
          'invalid_request_error, authentication_error, billing_error, permission_error, not_found_error, rate_limit_error, api_error, overloaded_error, timeout_error',
        ),
      message: z.string(),
    }),
    request_id: z.string().describe('The request-id header of the answer'),
  })
  .meta({ id: 'AnthropicError' });

export function errorsAnthropic<const S extends readonly number[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      anthropicErrorSchema.describe(`Anthropic's error shape: ${anthropicTypeOf(s)}${s === 413 ? TOO_LARGE : ''}`),
    ]),
  ) as { [K in S[number]]: typeof anthropicErrorSchema };
}
