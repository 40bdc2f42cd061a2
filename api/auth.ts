import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { findApiKeyByHash } from '../core/db/accounts';
import type { Plan } from '../core/db/accounts';
import { hashApiKey, isWellFormedApiKey } from '../core/api-keys';
import { UnauthorizedError } from '../core/errors';
import type { Principal } from '../core/principal';
import type { RateLimiter } from './rate-limit';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal & { plan: Plan };
  }
}

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/**
 * An onRequest hook (headers only, so a stranger's body is never parsed) that admits a live API key and counts it against its plan's rate limit. The error
 * type differs by group (`unauthorized` in C, `authentication_error` in A and B).
 */
export interface AuthDeps {
  pool: pg.Pool;
  limiter: RateLimiter;
}

export function requireApiKey(deps: AuthDeps, unauthorizedType: 'unauthorized' | 'authentication_error') {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = bearerToken(request);
    if (!token) throw new UnauthorizedError(undefined, unauthorizedType);
    const key = isWellFormedApiKey(token) ? await findApiKeyByHash(deps.pool, hashApiKey(token)) : undefined;
    if (!key) throw new UnauthorizedError('The API key is invalid or revoked.', unauthorizedType);
    const decision = await deps.limiter.decide(key.id, key.plan);
    reply.header('RateLimit-Limit', String(decision.limit));
    reply.header('RateLimit-Remaining', String(decision.remaining));
    reply.header('RateLimit-Reset', String(decision.resetSeconds));
    if (decision.refused) throw decision.refused;
    request.principal = {
      accountId: key.accountId, apiKeyId: key.id, scopes: key.scopes, models: key.models, plan: key.plan,
      ...(key.availableMc === undefined ? {} : { availableMc: key.availableMc }),
    };
  };
}

export function principalOf(request: FastifyRequest): Principal & { plan: Plan } {
  if (!request.principal) throw new UnauthorizedError();
  return request.principal;
}
