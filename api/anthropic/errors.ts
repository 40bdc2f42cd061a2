import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { isAfterAdmission } from '../../core/errors';
import { anthropicError, anthropicTypeOf } from '../shared/anthropic/errors';
import { domainErrorOf, errorHeaders } from '../shared/errors';
import { apiError, PATH_PARAM_TOO_LONG } from '../shared/schemas';

/**
 * The Anthropic door's one error mapper: every failure in Anthropic's shape (api/shared/anthropic/errors.ts).
 * Headers are every door's: `retry-after`, `retry-after-ms`, `x-should-retry: false` after
 * admission. A 5xx never shows its internal message.
 */

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

/** As Anthropic's API does, a body over the limit is refused by its size, before anything in it is judged. */
const TOO_LARGE = '; the body is over 8 MB, refused by its size before it is read, whatever it holds';

export function errorsAnthropic<const S extends readonly number[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => [
      s,
      anthropicErrorSchema.describe(`Anthropic's error shape: ${anthropicTypeOf(s)}${s === 413 ? TOO_LARGE : ''}`),
    ]),
  ) as { [K in S[number]]: typeof anthropicErrorSchema };
}

/**
 * The 400 of a route with a path parameter: Anthropic's shape for what the door refuses (a missing
 * or unknown `anthropic-version`), the service's for a parameter the router refuses before any
 * route runs.
 */
export const anthropicOrRouter400 = z
  .union([anthropicErrorSchema, apiError])
  .describe(`Anthropic's error shape: invalid_request_error; or ${PATH_PARAM_TOO_LONG}, in the service's shape`);
