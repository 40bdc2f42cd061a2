import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  accountAlerts,
  alertsView,
  budgetViewOf,
  createKey,
  createKeyBody,
  keyBudgetBody,
  keyBudgetView,
  lowBalanceBody,
  removeBudget,
  revokeKey,
  setBudget,
  emailAddress,
  setLowBalance,
} from '../../service/accounts/operations';
import { SCOPES } from '../../core/accounts/api-keys';
import { listApiKeys } from '../../core/db/accounts';
import { readKeyBudget } from '../../core/db/budgets';
import { UnauthorizedError } from '../../core/errors';
import { PERMISSIONS, ROLE_PERMISSIONS, ROLES } from '../../core/roles';
import { customerRoutes } from '../customers/routes';
import { auditRoutes } from '../audit/routes';
import { teamRoutes } from './team';
import { assertRoleMay } from './permissions';
import { ledgerAnswer, ledgerList, ledgerQuery } from '../shared/ledger';
import { actorOf } from '../../core/accounts/principal';
import { MAX_PASSWORD_LENGTH } from '../../core/accounts/passwords';
import type { OutputStore } from '../../core/storage/output-store';
import { GENERATION_KINDS, GENERATION_STATUSES, isFinal } from '../../core/vocabulary';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import { csrfTokenOf, SESSION_TTL_MS } from '../../service/accounts/sessions';
import type { Session } from '../../service/accounts/sessions';
import type { BillingService } from '../../service/billing/purchases';
import type { SignupService } from '../../service/accounts/signup';
import type { WebhookService } from '../../service/webhooks/endpoints';
import { admitSession, assertSameOrigin, principalOf, rateLimited, SESSION_COOKIE } from '../shared/auth';
import type { SessionAuthDeps } from '../shared/auth';
import type { StandingMonitor } from '../shared/standing';
import { listQuery } from '../shared/fields';
import { groupCGenerateBody, groupCRequestOf } from '../shared/generate-bodies';
import { usageCsv, usageReport as reportUsage } from '../../service/usage/usage';
import { sendCsv, wantsCsv } from '../shared/csv';
import {
  balance,
  errorResponses,
  usageQuery,
  usageReport,
  generation,
  generationKind,
  generationList,
  generationListOf,
  generationOf,
  generationStatus,
  idParams,
  quote,
} from '../shared/schemas';
import type { ErrorStatus } from '../shared/schemas';
import { webhookRoutes } from '../webhooks/routes';
import { dashboardBatchRoutes } from './batches';
import { liveEvents, overviewOf } from './events';

/** Limits of the dashboard's own calls, per user, per 60 s window. */
export interface DashboardLimits {
  /** Every call of a logged-in user (pages load several; the live view is one). */
  requestsPerMinute: number;
  /** Login attempts per email address, and per client IP address (both counted on every attempt). */
  loginsPerEmail: number;
  loginsPerIp: number;
}

export const DEFAULT_DASHBOARD_LIMITS: DashboardLimits = { requestsPerMinute: 600, loginsPerEmail: 5, loginsPerIp: 20 };

export interface DashboardApiDeps extends SessionAuthDeps {
  service: GenerationService;
  /** Checks open live streams' sessions (api/shared/standing.ts). */
  standing: StandingMonitor;
  batches: BatchService;
  webhooks: WebhookService;
  store: OutputStore;
  limits: DashboardLimits;
  /** Self-service sign-up, when SIGNUP=open; its routes are absent otherwise. */
  signup?: SignupService | undefined;
  /** Buying credits, when Stripe is configured; the Billing routes are absent otherwise. */
  billing?: BillingService | undefined;
  /** Where Stripe sends the buyer back (PUBLIC_BASE_URL's origin); the request's own when absent. */
  publicBaseUrl?: string | undefined;
}

const tags = ['Dashboard'];
const security = [{ session: [] }];
/**
 * What every session route can answer. Changes (POST, PUT, PATCH, DELETE) can also answer 403: the
 * CSRF check, or a role without the route's permission (permissions.ts); so can the reads that
 * need more than `read` (the ledger, the audit log).
 */
const sessionErrors = [401, 429, 500, 503] as const;

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

const signupBody = z
  .strictObject({
    email: emailAddress
      .transform((e) => e.trim().toLowerCase())
      .describe('The address to confirm; compared case-insensitively'),
    password: z
      .string()
      .max(MAX_PASSWORD_LENGTH)
      .describe('10 to 200 characters; not a commonly used password, nor the email address or its name part'),
  })
  .meta({ id: 'DashboardSignup' });

const SIGNUP_ANSWER =
  'If this address can be used, a link to confirm it is on its way: follow it within 24 hours to create your account.';

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

const overview = balance
  .extend({
    rateLimitPerMinute: z.number().int().describe('Requests per minute per key (and per dashboard user on group C)'),
  })
  .meta({ id: 'DashboardOverview' });

/** The words the pages list (filters, scopes, the playground's kinds): served from core/vocabulary.ts, so a new kind or status reaches them too. */
const vocabulary = z
  .object({
    kinds: z.array(generationKind).describe('What a generation can be'),
    scopes: z
      .array(z.string())
      .describe('What a key can be allowed: a kind each, and webhooks (manage the account’s webhook endpoints)'),
    statuses: z.array(generationStatus).describe('Where a generation can stand, in lifecycle order'),
    inFlight: z
      .array(generationStatus)
      .describe('The statuses that are not final: such a generation still changes and can be cancelled'),
  })
  .meta({ id: 'DashboardVocabulary' });
const VOCABULARY: z.infer<typeof vocabulary> = {
  kinds: [...GENERATION_KINDS],
  scopes: [...SCOPES],
  statuses: [...GENERATION_STATUSES],
  inFlight: GENERATION_STATUSES.filter((s) => !isFinal(s)),
};

const keySummary = {
  id: z.string(),
  hint: z.string().describe('The first and last characters of the key: enough to recognise it, never enough to use it'),
  scopes: z.array(z.string()),
  models: z.array(z.string()).nullable(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable().describe('Updated at most about once a minute'),
  budget: keyBudgetView.nullable().describe('The key’s spending budget with what it spent this period; null: none'),
};
const apiKey = z.object(keySummary).meta({ id: 'DashboardApiKey' });
const apiKeyCreated = z
  .object({ ...keySummary, key: z.string().describe('gsk_…: shown in this answer only') })
  .meta({ id: 'DashboardApiKeyCreated' });
const keyParams = z.object({ id: z.string().describe('A key id (key_…)') });

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

/** The dashboard's JSON calls under /dashboard/api: a session cookie, and its CSRF token on every change. */
export const dashboardApiRoutes: FastifyPluginAsyncZod<DashboardApiDeps> = async (app, deps) => {
  const { sessions, limiter, limits } = deps;
  const noStore = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('Cache-Control', 'no-store');
  };
  app.addHook('onRequest', noStore);

  /** Login and set-password: no session yet, so no CSRF token either; the origin is checked and attempts are counted. */
  const anonymous = app.withTypeProvider<ZodTypeProvider>();
  const countAttempt = async (request: FastifyRequest, reply: FastifyReply, email?: string) => {
    assertSameOrigin(request, sessions.origins);
    await rateLimited(limiter, reply, bucketOf('ip', request.ip), limits.loginsPerIp);
    if (email !== undefined)
      await rateLimited(limiter, reply, bucketOf('email', email.trim().toLowerCase()), limits.loginsPerEmail);
  };

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
      await countAttempt(request, reply, request.body.email);
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
      await countAttempt(request, reply);
      return sessions.service.setPassword(request.body.token, request.body.password);
    },
  );

  const { signup } = deps;
  if (signup) {
    anonymous.post(
      '/dashboard/api/signup',
      {
        schema: {
          operationId: 'dashboardSignup',
          tags,
          security: [],
          summary: 'Ask for an account: a link to confirm the address is emailed',
          description: `Open when the service runs with SIGNUP=open. The answer is the same whether or not the address already has an account (that address gets a note instead of a link). Limited per email (${limits.loginsPerEmail} a minute) and per client address (${limits.loginsPerIp} a minute).`,
          body: signupBody,
          response: { 202: z.object({ message: z.string() }), ...errorResponses(400, 403, 429, 500, 503) },
        },
      },
      async (request, reply) => {
        assertSameOrigin(request, sessions.origins);
        await rateLimited(
          limiter,
          reply,
          `signup:ip:${createHash('sha256').update(request.ip).digest('base64url')}`,
          limits.loginsPerIp,
        );
        await rateLimited(
          limiter,
          reply,
          `signup:email:${createHash('sha256').update(request.body.email).digest('base64url')}`,
          limits.loginsPerEmail,
        );
        await signup.request(request.body.email, request.body.password);
        reply.code(202);
        return { message: SIGNUP_ANSWER };
      },
    );

    anonymous.post(
      '/dashboard/api/signup/verify',
      {
        schema: {
          operationId: 'dashboardVerifySignup',
          tags,
          security: [],
          summary: 'Follow the emailed link: creates the account (plan free) and its user, then log in',
          body: z
            .strictObject({ token: z.string().max(200).describe('The token of the emailed link') })
            .meta({ id: 'DashboardVerifySignup' }),
          response: {
            200: z.object({ email: z.string(), accountId: z.string() }),
            ...errorResponses(400, 403, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        await countAttempt(request, reply);
        return signup.verify(request.body.token);
      },
    );
  }

  await app.register(async (authed) => {
    authed.addHook('onRequest', async (request, reply) => {
      if (!(await admitSession(sessions, request)))
        throw new UnauthorizedError('Log in to the dashboard first (/dashboard/login).');
      await rateLimited(limiter, reply, `dashboard:${request.session!.userId}`, limits.requestsPerMinute);
      // Every route needs its permission (permissions.ts); the member's role is read with the session.
      assertRoleMay(request);
    });
    const route = authed.withTypeProvider<ZodTypeProvider>();
    const errors = <const S extends readonly ErrorStatus[]>(...own: S) => errorResponses(...own, ...sessionErrors);
    const changeErrors = <const S extends readonly ErrorStatus[]>(...own: S) =>
      errorResponses(...own, 403, ...sessionErrors);

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

    route.get(
      '/dashboard/api/vocabulary',
      {
        schema: {
          operationId: 'dashboardVocabulary',
          tags,
          security,
          summary: 'The kinds and statuses of generations, which the pages list',
          response: { 200: vocabulary, ...errors() },
        },
      },
      async () => VOCABULARY,
    );

    route.get(
      '/dashboard/api/overview',
      {
        schema: {
          operationId: 'dashboardOverview',
          tags,
          security,
          summary: 'Balance, holds, free chat allowance, plan and rate limit',
          response: { 200: overview, ...errors() },
        },
      },
      async (request) => overviewOf(await deps.service.balance(principalOf(request))),
    );

    route.get(
      '/dashboard/api/alerts',
      {
        schema: {
          operationId: 'dashboardAlerts',
          tags,
          security,
          summary: 'The low-balance threshold and the latest balance.low and key.budget_reached alerts',
          response: { 200: alertsView, ...errors() },
        },
      },
      async (request) => accountAlerts(deps.pool, principalOf(request).accountId),
    );

    route.put(
      '/dashboard/api/low-balance',
      {
        schema: {
          operationId: 'dashboardSetLowBalance',
          tags,
          security,
          summary: 'Set (or with null remove) the credits below which balance.low is sent',
          body: lowBalanceBody,
          response: { 200: alertsView, ...changeErrors(400) },
        },
      },
      async (request) =>
        setLowBalance(deps.pool, principalOf(request).accountId, request.body, actorOf(principalOf(request))),
    );

    const { billing } = deps;
    if (billing) {
      route.get(
        '/dashboard/api/billing',
        {
          schema: {
            operationId: 'dashboardBilling',
            tags,
            security,
            summary: 'How many credits one purchase may buy (1 credit = 0.01 EUR)',
            response: {
              200: z
                .object({ minCredits: z.number().int(), maxCredits: z.number().int(), eurPerCredit: z.number() })
                .meta({ id: 'DashboardBilling' }),
              ...errors(),
            },
          },
        },
        async () => ({ ...billing.limits, eurPerCredit: 0.01 }),
      );

      route.post(
        '/dashboard/api/billing/checkout',
        {
          schema: {
            operationId: 'dashboardCheckout',
            tags,
            security,
            summary: 'Buy credits: a Stripe Checkout page for the account (the same as POST /api/v1/billing/checkout)',
            body: z
              .strictObject({
                credits: z.number().int().describe('Whole credits within the limits of GET /dashboard/api/billing'),
              })
              .meta({ id: 'DashboardCheckoutRequest' }),
            response: {
              200: z
                .object({ id: z.string(), url: z.string().describe('Where the buyer pays') })
                .meta({ id: 'DashboardCheckout' }),
              ...changeErrors(400),
            },
          },
        },
        async (request) =>
          billing.checkout(
            principalOf(request),
            request.body.credits,
            deps.publicBaseUrl ?? `${request.protocol}://${request.host}`,
          ),
      );
    }

    route.get(
      '/dashboard/api/usage',
      {
        schema: {
          operationId: 'dashboardUsage',
          tags,
          security,
          summary: 'The account’s usage per day, model, key, kind or customer (as GET /api/v1/usage), or as CSV',
          querystring: usageQuery,
          response: {
            200: {
              description: 'The report (JSON), or its groups as CSV',
              content: { 'application/json': { schema: usageReport }, 'text/csv': { schema: z.string() } },
            },
            ...errors(400),
          },
        },
      },
      async (request, reply) => {
        const report = await reportUsage(deps.pool, principalOf(request), request.query);
        return wantsCsv(request) ? sendCsv(reply, 'usage.csv', usageCsv(report)) : report;
      },
    );

    route.get(
      '/dashboard/api/generations',
      {
        schema: {
          operationId: 'dashboardListGenerations',
          tags,
          security,
          summary: 'The account’s generations, newest first (as GET /api/v1/generations)',
          querystring: listQuery,
          response: { 200: generationList, ...errors(400) },
        },
      },
      async (request) => generationListOf(await deps.service.list(principalOf(request), request.query)),
    );

    route.post(
      '/dashboard/api/generations/:id/cancel',
      {
        schema: {
          operationId: 'dashboardCancelGeneration',
          tags,
          security,
          summary: 'Cancel a queued or running generation; its hold is released',
          params: idParams,
          response: { 200: generation, ...changeErrors(404, 409) },
        },
      },
      async (request) => generationOf(await deps.service.cancel(principalOf(request), request.params.id)),
    );

    route.post(
      '/dashboard/api/quote',
      {
        schema: {
          operationId: 'dashboardQuote',
          tags,
          security,
          summary: 'The price of a group C request (POST /api/generate’s body), with nothing held',
          body: groupCGenerateBody,
          response: { 200: quote, ...changeErrors(400) },
        },
      },
      async (request) => deps.service.quote(groupCRequestOf(request.body), principalOf(request), 'dashboard'),
    );

    const keyOf = async (k: Awaited<ReturnType<typeof listApiKeys>>[number]) => {
      const budget = await readKeyBudget(deps.pool, k.id, { lock: false });
      return {
        ...k,
        createdAt: k.createdAt.toISOString(),
        lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
        budget: budget ? budgetViewOf(k.id, budget) : null,
      };
    };

    route.get(
      '/dashboard/api/keys',
      {
        schema: {
          operationId: 'dashboardListKeys',
          tags,
          security,
          summary: 'The account’s live API keys (never the keys themselves)',
          response: { 200: z.object({ data: z.array(apiKey) }), ...errors() },
        },
      },
      async (request) => ({
        data: await Promise.all((await listApiKeys(deps.pool, principalOf(request).accountId)).map(keyOf)),
      }),
    );

    route.post(
      '/dashboard/api/keys',
      {
        schema: {
          operationId: 'dashboardCreateKey',
          tags,
          security,
          summary: 'Issue an API key with scopes and an optional model list; the key is shown in this answer only',
          body: createKeyBody,
          response: { 201: apiKeyCreated, ...changeErrors(400) },
        },
      },
      async (request, reply) => {
        const accountId = principalOf(request).accountId;
        const { id, key } = await createKey(deps.pool, accountId, request.body, actorOf(principalOf(request)));
        const created = (await listApiKeys(deps.pool, accountId)).find((k) => k.id === id)!;
        reply.code(201);
        return { ...(await keyOf(created)), key };
      },
    );

    route.put(
      '/dashboard/api/keys/:id/budget',
      {
        schema: {
          operationId: 'dashboardSetKeyBudget',
          tags,
          security,
          summary: 'Set a key’s spending budget per day, week, month or in total (UTC periods)',
          params: keyParams,
          body: keyBudgetBody,
          response: { 200: keyBudgetView, ...changeErrors(400, 404) },
        },
      },
      async (request) =>
        setBudget(
          deps.pool,
          request.params.id,
          request.body,
          actorOf(principalOf(request)),
          principalOf(request).accountId,
        ),
    );

    route.delete(
      '/dashboard/api/keys/:id/budget',
      {
        schema: {
          operationId: 'dashboardRemoveKeyBudget',
          tags,
          security,
          summary: 'Remove a key’s spending budget',
          params: keyParams,
          response: { 200: z.object({ keyId: z.string(), removed: z.literal(true) }), ...changeErrors(404) },
        },
      },
      async (request) =>
        removeBudget(deps.pool, request.params.id, actorOf(principalOf(request)), principalOf(request).accountId),
    );

    route.delete(
      '/dashboard/api/keys/:id',
      {
        schema: {
          operationId: 'dashboardRevokeKey',
          tags,
          security,
          summary: 'Revoke a key at once: its next request is refused',
          params: keyParams,
          response: { 200: z.object({ id: z.string(), revoked: z.literal(true) }), ...changeErrors(404) },
        },
      },
      async (request) =>
        revokeKey(deps.pool, request.params.id, actorOf(principalOf(request)), principalOf(request).accountId),
    );

    // Live updates of the account's generations and balance (Server-Sent Events): not JSON, so not in the document.
    route.get('/dashboard/api/events', { schema: { hide: true } }, async (request, reply) => {
      liveEvents({ service: deps.service, standing: deps.standing }, request, reply);
    });

    await authed.register(dashboardBatchRoutes, { batches: deps.batches, service: deps.service });

    const sessionDoor = {
      base: '/dashboard/api',
      authenticate: async () => undefined,
      security,
      tags,
      operationPrefix: 'dashboard',
      errors: sessionErrors,
      changeErrors: [403] as const,
    };
    // Customers and the audit log as group A has them, with the session (and its role) instead of a key.
    await authed.register(customerRoutes, { pool: deps.pool, door: sessionDoor });
    await authed.register(auditRoutes, { pool: deps.pool, door: sessionDoor });
    await authed.register(teamRoutes, { pool: deps.pool, publicBaseUrl: deps.publicBaseUrl, errors: sessionErrors });

    route.get(
      '/dashboard/api/ledger',
      {
        schema: {
          operationId: 'dashboardLedger',
          tags,
          security,
          summary: 'The account’s ledger, newest first (as GET /api/v1/ledger), or as CSV',
          querystring: ledgerQuery,
          response: {
            200: {
              description: 'A page of entries (JSON), or the same as CSV',
              content: { 'application/json': { schema: ledgerList }, 'text/csv': { schema: z.string() } },
            },
            ...errors(400, 403),
          },
        },
      },
      async (request, reply) => ledgerAnswer(deps.pool, request, reply),
    );

    // The webhook API of group A, at /dashboard/api/webhooks with the session instead of a key.
    await authed.register(webhookRoutes, { webhooks: deps.webhooks, door: sessionDoor });
  });
};
