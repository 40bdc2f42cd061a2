import type { FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, UnknownCostError } from '../../core/errors';
import type { OutputStore } from '../../core/storage/output-store';
import type { GenerationService } from '../../service/generation/service';
import type { AuthDeps } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import { clientDeadlineMs, idempotencyOf, spendCapOption } from '../shared/fields';
import { customerOption, MAX_CUSTOMER_ID_CHARS } from '../shared/customers';
import { apiError } from '../shared/schemas';
import { safeText } from '../../core/text';

/** What every route of group B shares: its deps, its words for parameters and errors, its OpenAPI tags. */

export interface OpenAiDeps extends AuthDeps {
  service: GenerationService;
  store: OutputStore;
}

/** The shared request names fields as the service does; group B spells them OpenAI's way. */
export const GROUP_B_PARAMS: Record<string, string> = {
  imageUrl: 'image_url',
  inputFile: 'input_reference',
  maxTokens: 'max_tokens',
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
 * so do we (zod would silently strip it). Runs before validation, on the raw body.
 */
export function refuseUnknownFields(allowed: readonly string[]) {
  const known = new Set(allowed);
  return async (request: FastifyRequest): Promise<void> => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    const unknown = Object.keys(body).find((k) => !known.has(k));
    if (unknown !== undefined)
      throw new InvalidRequestError(`Unrecognized request argument supplied: ${unknown}`, unknown);
  };
}

/**
 * The service options of a group B POST: its door, the Idempotency-Key with what it stands for,
 * the client's deadline (`Cancel-After`, or the body's `deadline_seconds`) where the route takes
 * one, and the customer: OpenAI's `safety_identifier` or `user`, a remix's `customer`, or `X-Customer-Id`.
 */
export function submitOptionsOf(
  request: Parameters<typeof idempotencyOf>[0],
  route: string,
  body: unknown,
  bodyDeadlineSeconds?: number | null,
) {
  const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], bodyDeadlineSeconds ?? undefined);
  // Every group B body that submits takes `max_credits` and names a customer its way (validated by its schema).
  const fields = body as {
    max_credits?: number | null;
    safety_identifier?: string | null;
    user?: string | null;
    customer?: string;
  };
  return {
    door: 'B' as const,
    idempotency: idempotencyOf(request, route, body),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...spendCapOption(fields.max_credits, 'max_credits'),
    ...customerOption(request.headers, {
      safety_identifier: fields.safety_identifier,
      user: fields.user,
      customer: fields.customer,
    }),
  };
}

/**
 * OpenAI's ids for the end user a request is for (`user`, `safety_identifier`): the customer it is
 * for, like X-Customer-Id. An empty one names nobody (OpenAI accepts it).
 */
export const openAiEndUser = () =>
  safeText({ max: MAX_CUSTOMER_ID_CHARS }).describe(
    'Your own id for your end user this is for: the customer stored with the generation and held against its budget and rate limit (as X-Customer-Id); empty: none',
  );

/** Ends when the client closes the connection before the response is done. */
export function clientGone(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('the client closed the connection'));
  };
  reply.raw.once('close', onClose);
  request.raw.once('close', () => {
    if (request.raw.readableAborted) onClose();
  });
  return controller.signal;
}

/** Seconds since the epoch, as OpenAI's objects carry them. */
export const unixSeconds = (d: Date): number => Math.floor(d.getTime() / 1000);

export const security = [{ apiKey: [] }];
export const tags = ['Group B (OpenAI-compatible)'];

export function errorsB<const S extends readonly number[]>(...statuses: S) {
  return Object.fromEntries(
    statuses.map((s) => [s, apiError.describe(`OpenAI error shape: type is the code name, code the status ${s}`)]),
  ) as { [K in S[number]]: typeof apiError };
}
