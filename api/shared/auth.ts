import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { findApiKeyByHash, KEY_USE_RESOLUTION_MS, touchApiKey } from '../../core/db/accounts';
import type { Plan } from '../../core/plans';
import { SCOPES, hashApiKey, isWellFormedApiKey } from '../../core/accounts/api-keys';
import { CsrfError, PermissionError, UnauthorizedError } from '../../core/errors';
import { mayDo } from '../../core/roles';
import type { Permission } from '../../core/roles';
import type { Principal } from '../../core/accounts/principal';
import { csrfTokenMatches } from '../../service/accounts/sessions';
import type { Session, SessionService } from '../../service/accounts/sessions';
import { PLAN_RATE_LIMITS } from '../../core/plans';
import type { RateDecision, RateLimiter } from './rate-limit';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal & { plan: Plan };
    /** Set when a dashboard session (not an API key) authenticated the request. */
    session?: Session & { token: string };
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

/** What a door that also takes dashboard sessions needs (group C and the dashboard's own API). */
export interface SessionAuthDeps extends AuthDeps {
  sessions: SessionCookies;
}

export interface SessionCookies {
  service: SessionService;
  /** Secure cookies outside development mode (a plain-http localhost would never send them back). */
  secure: boolean;
  /** Web origins whose pages may make a session's state-changing calls, besides the request's own. */
  origins: readonly string[];
}

export const SESSION_COOKIE = 'gensvc_session';
export const CSRF_HEADER = 'x-csrf-token';

function applyRateHeaders(reply: FastifyReply, decision: RateDecision): void {
  reply.header('RateLimit-Limit', String(decision.limit));
  reply.header('RateLimit-Remaining', String(decision.remaining));
  reply.header('RateLimit-Reset', String(decision.resetSeconds));
  if (decision.refused) throw decision.refused;
}

/** Counts the request in a bucket, sets the RateLimit-* headers, and refuses it with 429 when full. */
export async function rateLimited(
  limiter: RateLimiter,
  reply: FastifyReply,
  bucket: string,
  limit: number,
): Promise<void> {
  applyRateHeaders(reply, await limiter.check(bucket, limit));
}

async function admitKey(
  deps: AuthDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  unauthorizedType: 'unauthorized' | 'authentication_error',
): Promise<void> {
  const key = isWellFormedApiKey(token) ? await findApiKeyByHash(deps.pool, hashApiKey(token)) : undefined;
  if (!key) throw new UnauthorizedError('The API key is invalid or revoked.', unauthorizedType);
  applyRateHeaders(reply, await deps.limiter.decide(key.id, key.plan));
  // "Last used" for the dashboard: one write per key per minute at most, decided from the row just read.
  if (!key.lastUsedAt || Date.now() - key.lastUsedAt.getTime() >= KEY_USE_RESOLUTION_MS)
    await touchApiKey(deps.pool, key.id);
  request.principal = {
    accountId: key.accountId,
    apiKeyId: key.id,
    actor: { type: 'key', id: key.id, ip: request.ip },
    scopes: key.scopes,
    models: key.models,
    plan: key.plan,
    budgeted: key.budgeted,
    ...(key.availableMc === undefined ? {} : { availableMc: key.availableMc }),
  };
}

/** `tokenOf` reads the key where the door's clients send it: `Authorization: Bearer` unless the door says otherwise. */
export function requireApiKey(
  deps: AuthDeps,
  unauthorizedType: 'unauthorized' | 'authentication_error',
  tokenOf: (request: FastifyRequest) => string | undefined = bearerToken,
) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = tokenOf(request);
    if (!token) throw new UnauthorizedError(undefined, unauthorizedType);
    await admitKey(deps, request, reply, token, unauthorizedType);
  };
}

/** The value of one cookie of the request (no cookie library: one name, read-only). */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A page of another origin may not act with the user's cookie. An `Origin` header (browsers send it
 * on every POST, PATCH and DELETE) must be the request's own origin or a configured one, and a
 * browser's `Sec-Fetch-Site: cross-site` is refused outright. The cookie is bound to its host name,
 * so unlike a bearer key a DNS-rebound page never carries it: judging "own" from Host is safe here.
 */
export function assertSameOrigin(request: FastifyRequest, origins: readonly string[]): void {
  const origin = request.headers.origin;
  const own = `${request.protocol}://${request.host}`;
  if (origin !== undefined && origin !== own && !origins.includes(origin)) {
    throw new CsrfError(`Requests from pages of ${origin} are refused.`);
  }
  if (request.headers['sec-fetch-site'] === 'cross-site') throw new CsrfError('Cross-site requests are refused.');
}

/**
 * Admits the session behind the cookie. A state-changing call must also come from an allowed
 * origin and carry the session's CSRF token in `X-CSRF-Token` (compared in constant time).
 * Returns false when there is no live session.
 */
export async function admitSession(deps: SessionCookies, request: FastifyRequest): Promise<boolean> {
  const token = cookieOf(request, SESSION_COOKIE);
  const session = token ? await deps.service.authenticate(token) : undefined;
  if (!token || !session) return false;
  if (!SAFE_METHODS.has(request.method)) {
    assertSameOrigin(request, deps.origins);
    const given = request.headers[CSRF_HEADER];
    if (!csrfTokenMatches(token, typeof given === 'string' ? given : undefined)) {
      throw new CsrfError(`A dashboard session's ${request.method} needs its CSRF token in the X-CSRF-Token header.`);
    }
  }
  request.session = { ...session, token };
  // A person in the dashboard acts for the whole account: every scope, every model.
  request.principal = {
    accountId: session.accountId,
    apiKeyId: null,
    scopes: [...SCOPES],
    models: null,
    plan: session.plan,
    actor: { type: 'user', id: session.userId, email: session.email, ip: request.ip },
  };
  return true;
}

/**
 * Group C (spec, Authentication 4): a valid API key or a valid session. A key, when sent, decides;
 * otherwise the session cookie, rate-limited per user at the account's plan limit, as a key is.
 */
export function requireKeyOrSession(deps: SessionAuthDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const token = bearerToken(request);
    if (token) return admitKey(deps, request, reply, token, 'unauthorized');
    if (!(await admitSession(deps.sessions, request)))
      throw new UnauthorizedError(
        'A valid API key (Authorization: Bearer <API_KEY>) or dashboard session is required.',
      );
    const plan = request.principal!.plan;
    await rateLimited(deps.limiter, reply, `user:${request.session!.userId}`, PLAN_RATE_LIMITS[plan]);
  };
}

/**
 * A dashboard session may do what its member's role allows (core/roles.ts): refused with 403
 * permission_error otherwise. Nothing to check for an API key (its scopes decide).
 */
export function assertSessionMay(request: FastifyRequest, permission: Permission): void {
  const session = request.session;
  if (session && !mayDo(session.role, permission))
    throw new PermissionError(`Your role (${session.role}) may not do this: it needs the '${permission}' permission.`);
}

export function principalOf(request: FastifyRequest): Principal & { plan: Plan } {
  if (!request.principal) throw new UnauthorizedError();
  return request.principal;
}
