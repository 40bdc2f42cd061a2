import type { FastifyRequest } from 'fastify';
import { InvalidRequestError, UnknownCostError } from '../../core/errors';
import type { AnthropicHeaders } from '../../core/generation/params';
import { bearerToken } from '../shared/auth';
import { inDoorWords } from '../shared/errors';

/**
 * What every route of the Anthropic door reads of Anthropic's protocol: the key, the version and
 * beta headers, and the names Anthropic gives the service's errors.
 */

/** The versions of Anthropic's API whose request and reply shapes this door speaks. */
export const VERSIONS = { first: '2023-06-01', last: '2026-10-21' };
export const PARAMS: Record<string, string> = {
  maxTokens: 'max_tokens',
  responseFormat: 'output_config.format',
  kind: 'model',
};

/** The key as Anthropic's clients send it: `x-api-key`, or `Authorization: Bearer` (the current SDK's). */
export const keyOf = (request: FastifyRequest): string | undefined => {
  const given = request.headers['x-api-key'];
  return typeof given === 'string' && given !== '' ? given : bearerToken(request);
};

/** `anthropic-version` is required, as Anthropic requires it, and must be one this door speaks. */
export function checkVersion(request: FastifyRequest): void {
  const version = request.headers['anthropic-version'];
  if (typeof version !== 'string' || version === '')
    throw new InvalidRequestError('anthropic-version: header is required', 'anthropic-version');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version) || version < VERSIONS.first || version > VERSIONS.last)
    throw new InvalidRequestError(
      `anthropic-version: ${version} is not a version this service speaks (${VERSIONS.first} to ${VERSIONS.last}).`,
      'anthropic-version',
    );
}

/** The client's protocol headers as sent (checkVersion has already judged the version). */
export function anthropicHeadersOf(request: FastifyRequest): AnthropicHeaders {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(',') : value;
  };
  const beta = header('anthropic-beta');
  return { version: header('anthropic-version'), ...(beta === undefined ? {} : { beta }) };
}

/** Anthropic's names for the service's errors: an unknown model is a bad `model`, as Anthropic says it. */
export const inAnthropicWords = <T>(work: () => Promise<T>): Promise<T> =>
  inDoorWords(PARAMS, work, (err) =>
    err instanceof UnknownCostError
      ? new InvalidRequestError(err.message.replace('No price is defined for', 'There is no'), 'model')
      : undefined,
  );
