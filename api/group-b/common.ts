import type { FastifyRequest } from 'fastify';
import { InvalidRequestError, UnknownCostError } from '../../core/errors';
import type { OutputStore } from '../../core/storage/output-store';
import type { GenerationService } from '../../service/generation/service';
import type { AuthDeps } from '../shared/auth';
import { inDoorWords } from '../shared/errors';
import { clientDeadlineMs, idempotencyOf, spendCapOption } from '../shared/fields';
import { apiError } from '../shared/schemas';

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
 * and the client's deadline (`Cancel-After`, or the body's `deadline_seconds`) where the route takes one.
 */
export function submitOptionsOf(
  request: Parameters<typeof idempotencyOf>[0],
  route: string,
  body: unknown,
  bodyDeadlineSeconds?: number | null,
) {
  const deadlineMs = clientDeadlineMs(request.headers['cancel-after'], bodyDeadlineSeconds ?? undefined);
  // Every group B body that submits takes `max_credits` (validated by its schema).
  const cap = (body as { max_credits?: number | null }).max_credits;
  return {
    door: 'B' as const,
    idempotency: idempotencyOf(request, route, body),
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
    ...spendCapOption(cap, 'max_credits'),
  };
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
