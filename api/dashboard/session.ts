import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_PASSWORD_LENGTH } from '../../core/accounts/passwords';
import { PERMISSIONS, ROLE_PERMISSIONS, ROLES } from '../../core/roles';
import { csrfTokenOf, SESSION_TTL_MS } from '../../service/accounts/sessions';
import type { Session } from '../../service/accounts/sessions';
import { assertSameOrigin, rateLimited, SESSION_COOKIE } from '../shared/auth';
import type { SessionCookies } from '../shared/auth';
import type { RateLimiter } from '../shared/rate-limit';
import { errorResponses } from '../shared/schemas';
import { changeErrors, errors, security, tags } from './route-docs';

/** Login attempts let through per 60 s window. */
export interface LoginLimits {
  /** Login attempts per email address, and per client IP address (both counted on every attempt). */
  loginsPerEmail: number;
  loginsPerIp: number;
}

/** What the calls made before there is a session need: the cookies' settings and the attempt counters. */
export interface AnonymousDeps {
  sessions: SessionCookies;
  limiter: RateLimiter;
  limits: LoginLimits;
}

const loginBody = z
  .strictObject({
    email: z.string().max(254).describe('The user’s email, any case'),
    password: z.string().max(MAX_PASSWORD_LENGTH),
  })
  .meta({ id: 'DashboardLogin' });

const setPasswordBody = z
  .strictObject({
    token: z.string().max(200).describe('The token of the one-time link the operator handed out'),
    password: z
      .string()
      .max(MAX_PASSWORD_LENGTH)
      .describe('10 to 200 characters; not a commonly used password, nor the email address or its name part'),
  })
  .meta({ id: 'DashboardSetPassword' });

const sessionInfo = z
  .object({
    user: z.object({ id: z.string(), email: z.string() }),
    accountId: z.string(),
    role: z.enum(ROLES).describe('The member’s role in the account'),
    permissions: z
      .array(z.enum(PERMISSIONS))
      .describe('What the role may do (docs/api/dashboard.md maps them to routes)'),
    csrfToken: z.string().describe('Send it as X-CSRF-Token on every POST, PATCH and DELETE made with this session'),
    expiresAt: z.string(),
  })
  .meta({ id: 'DashboardSession' });

function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${token}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${maxAgeSeconds}`,
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

const sessionInfoOf = (s: Session, token: string): z.infer<typeof sessionInfo> => ({
  user: { id: s.userId, email: s.email },
  accountId: s.accountId,
  role: s.role,
  permissions: [...ROLE_PERMISSIONS[s.role]],
  csrfToken: csrfTokenOf(token),
  expiresAt: s.expiresAt.toISOString(),
});

const bucketOf = (kind: string, value: string) =>
  `login:${kind}:${createHash('sha256').update(value).digest('base64url')}`;

/**
 * A call made without a session has no CSRF token either: its origin is checked instead, and it
 * counts as an attempt of its client address (and of the email address, when it names one).
 */
export async function countAttempt(
  { sessions, limiter, limits }: AnonymousDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  email?: string,
): Promise<void> {
  assertSameOrigin(request, sessions.origins);
  await rateLimited(limiter, reply, bucketOf('ip', request.ip), limits.loginsPerIp);
  if (email !== undefined)
    await rateLimited(limiter, reply, bucketOf('email', email.trim().toLowerCase()), limits.loginsPerEmail);
}

/** Logging in and setting a password with a one-time link: the calls that make a session. */
export const loginRoutes: FastifyPluginAsyncZod<AnonymousDeps> = async (app, deps) => {
  const { sessions, limits } = deps;
  const anonymous = app.withTypeProvider<ZodTypeProvider>();

  anonymous.post(
    '/dashboard/api/login',
    {
      schema: {
        operationId: 'dashboardLogin',
        tags,
        security: [],
        summary: 'Log in: sets the HttpOnly session cookie and answers the CSRF token',
        description: `Attempts are limited per email (${limits.loginsPerEmail} a minute) and per client address (${limits.loginsPerIp} a minute).`,
        body: loginBody,
        response: { 200: sessionInfo, ...errorResponses(400, 401, 403, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      await countAttempt(deps, request, reply, request.body.email);
      const { token, session } = await sessions.service.login(
        request.body.email,
        request.body.password,
        request.headers['user-agent'] ?? null,
      );
      reply.header('Set-Cookie', sessionCookie(token, Math.floor(SESSION_TTL_MS / 1000), sessions.secure));
      return sessionInfoOf(session, token);
    },
  );

  anonymous.post(
    '/dashboard/api/set-password',
    {
      schema: {
        operationId: 'dashboardSetPassword',
        tags,
        security: [],
        summary: 'Set the password with a one-time link (then log in)',
        description: 'The link works once and expires; setting a password ends the user’s sessions.',
        body: setPasswordBody,
        response: { 200: z.object({ email: z.string() }), ...errorResponses(400, 403, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      await countAttempt(deps, request, reply);
      return sessions.service.setPassword(request.body.token, request.body.password);
    },
  );
};

/** The session's own calls, made with it (mounted inside the session scope): who is logged in, and logging out. */
export const sessionRoutes: FastifyPluginAsyncZod<{ sessions: SessionCookies }> = async (app, { sessions }) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.post(
    '/dashboard/api/logout',
    {
      schema: {
        operationId: 'dashboardLogout',
        tags,
        security,
        summary: 'End the session; its cookie is refused from then on',
        response: { 200: z.object({ loggedOut: z.literal(true) }), ...changeErrors() },
      },
    },
    async (request, reply) => {
      await sessions.service.logout(request.session!.token);
      reply.header('Set-Cookie', sessionCookie('', 0, sessions.secure));
      return { loggedOut: true as const };
    },
  );

  route.get(
    '/dashboard/api/session',
    {
      schema: {
        operationId: 'dashboardSession',
        tags,
        security,
        summary: 'Who is logged in, and the session’s CSRF token',
        response: { 200: sessionInfo, ...errors() },
      },
    },
    async (request) => sessionInfoOf(request.session!, request.session!.token),
  );
};
