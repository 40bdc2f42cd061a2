import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';
import {
  accountAlerts,
  alertsView,
  createAccount,
  createAccountBody,
  createKey,
  createKeyBody,
  createUser,
  createUserBody,
  keyBudgetBody,
  keyBudgetView,
  lowBalanceBody,
  removeBudget,
  revokeKey,
  setBudget,
  setLowBalance,
  topUp,
  topUpBody,
} from '../../service/accounts/operations';
import { MARGIN_GROUPS, marginReport } from '../../core/db/margins';
import { generationRouting } from '../../core/db/upstreams';
import { NotFoundError, UnauthorizedError } from '../../core/errors';
import { bearerToken } from '../shared/auth';
import { operator } from '../../service/accounts/audit';
import { errorResponses } from '../shared/schemas';

export interface AdminDeps {
  pool: pg.Pool;
  adminToken: string;
  defaultChatCap: number;
  /** The origin set-password links point at (PUBLIC_BASE_URL); the request's own when absent. */
  publicBaseUrl?: string | undefined;
}

const security = [{ adminToken: [] }];
const tags = ['Operator'];
const userCreated = z
  .object({
    id: z.string().describe('usr_…'),
    setPasswordUrl: z
      .string()
      .describe('Hand it to the user: it sets the password once, then the user logs in at /dashboard/login'),
    expiresAt: z.string().describe('When the link stops working'),
  })
  .meta({ id: 'UserCreated' });
const accountParams = z.object({ id: z.string().describe('An account id (acct_…)') });
const usageTotals = {
  generations: z.number().int(),
  revenueEur: z.number().describe('What the ledger charged (1 credit = 0.01 EUR)'),
  costEur: z.number().describe('What the serving upstreams cost, where UPSTREAMS_JSON gives their costEur'),
  marginEur: z.number().describe('revenueEur − costEur'),
  uncosted: z
    .number()
    .int()
    .describe('Generations with no configured cost (the simulator, or an upstream without costEur)'),
};
const usageReportSchema = z
  .object({
    groupBy: z.enum(MARGIN_GROUPS),
    from: z.string(),
    to: z.string(),
    rows: z.array(
      z.object({
        key: z.string().describe('The model id, the upstream (simulator for the built-in one), or the UTC day'),
        ...usageTotals,
      }),
    ),
    total: z.object(usageTotals),
  })
  .meta({ id: 'MarginReport' });
const usageQuery = z.object({
  group_by: z.enum(MARGIN_GROUPS).default('model'),
  from: z.iso
    .datetime({ offset: true })
    .or(z.iso.date())
    .optional()
    .describe('ISO 8601 date or time; default 30 days before `to`'),
  to: z.iso
    .datetime({ offset: true })
    .or(z.iso.date())
    .optional()
    .describe('ISO 8601 date or time (exclusive); default now'),
});
const keyParams = z.object({ id: z.string().describe('A key id (key_…)') });
const DAY_MS = 86_400_000;

/** An onRequest hook admitting only the operator's token (compared in constant time). */
export function requireAdminToken(adminToken: string) {
  const expected = createHash('sha256').update(adminToken).digest();
  return async (request: FastifyRequest): Promise<void> => {
    const token = bearerToken(request);
    const given = createHash('sha256')
      .update(token ?? '')
      .digest();
    if (!token || !timingSafeEqual(given, expected))
      throw new UnauthorizedError('A valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>).');
  };
}

type AdminApp = Parameters<FastifyPluginAsyncZod<AdminDeps>>[0];

/** What every operator route's documentation says alike: its id, its group and its guard. */
const operatorDoc = (operationId: string, summary: string) => ({ operationId, tags, security, summary });

/** The operator API (DESIGN §8), guarded by ADMIN_TOKEN; the groups register in the document's order. */
export const adminRoutes: FastifyPluginAsyncZod<AdminDeps> = async (app, deps) => {
  app.addHook('onRequest', requireAdminToken(deps.adminToken));
  accountRoutes(app, deps);
  alertRoutes(app, deps);
  userRoutes(app, deps);
  reportRoutes(app, deps);
  keyRoutes(app, deps);
};

/** Opening an account, issuing its keys and adding credits. */
function accountRoutes(app: AdminApp, deps: AdminDeps): void {
  app.post(
    '/admin/v1/accounts',
    {
      schema: {
        ...operatorDoc('adminCreateAccount', 'Open an account with a plan and opening credits'),
        body: createAccountBody,
        response: { 201: z.object({ id: z.string() }), ...errorResponses(400, 401, 500, 503) },
      },
    },
    async (request, reply) => {
      reply.code(201);
      return createAccount(deps.pool, request.body, deps.defaultChatCap);
    },
  );

  app.post(
    '/admin/v1/accounts/:id/keys',
    {
      schema: {
        ...operatorDoc('adminCreateKey', 'Issue an API key; the key is shown only in this answer'),
        params: accountParams,
        body: createKeyBody,
        response: {
          201: z.object({ id: z.string(), key: z.string().describe('gsk_…; store it now, it is never shown again') }),
          ...errorResponses(400, 401, 404, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const created = await createKey(deps.pool, request.params.id, request.body, operator(request.ip));
      reply.code(201);
      return created;
    },
  );

  app.post(
    '/admin/v1/accounts/:id/credits',
    {
      schema: {
        ...operatorDoc('adminTopUp', 'Add credits to an account'),
        params: accountParams,
        body: topUpBody,
        response: {
          200: z.object({ id: z.string(), balance: z.number() }),
          ...errorResponses(400, 401, 404, 500, 503),
        },
      },
    },
    async (request) => topUp(deps.pool, request.params.id, request.body),
  );
}

/** An account's low-balance threshold and the alerts it has sent. */
function alertRoutes(app: AdminApp, deps: AdminDeps): void {
  app.put(
    '/admin/v1/accounts/:id/low-balance',
    {
      schema: {
        ...operatorDoc('adminSetLowBalance', 'Set the credits below which the account is sent balance.low'),
        description:
          'Once per crossing from at or above the threshold to below it; money coming in that lifts the available credits back to it re-arms the alert.',
        params: accountParams,
        body: lowBalanceBody,
        response: { 200: alertsView, ...errorResponses(400, 401, 404, 500, 503) },
      },
    },
    async (request) => setLowBalance(deps.pool, request.params.id, request.body, operator(request.ip)),
  );

  app.get(
    '/admin/v1/accounts/:id/alerts',
    {
      schema: {
        ...operatorDoc('adminAccountAlerts', 'The account’s low-balance threshold and latest alerts'),
        params: accountParams,
        response: { 200: alertsView, ...errorResponses(401, 404, 500, 503) },
      },
    },
    async (request) => accountAlerts(deps.pool, request.params.id),
  );
}

/** Dashboard users: created, or sent a new link, with a one-time link to set the password. */
function userRoutes(app: AdminApp, deps: AdminDeps): void {
  app.post(
    '/admin/v1/users',
    {
      schema: {
        ...operatorDoc(
          'adminCreateUser',
          'Create a dashboard user of an account; answers a one-time link to set the password',
        ),
        description:
          'The link works once and expires after 24 hours. Asking again for a user of the same account answers 200 with a new link (an invitation resent, or a password reset).',
        body: createUserBody,
        response: {
          201: userCreated.describe('A new user'),
          200: userCreated.describe('The user already existed in this account: a new link'),
          ...errorResponses(400, 401, 404, 409, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const user = await createUser(deps.pool, request.body, operator(request.ip));
      const base = deps.publicBaseUrl ?? `${request.protocol}://${request.host}`;
      reply.code(user.created ? 201 : 200);
      // The token travels in the fragment, which browsers never send to a server nor put in a Referer.
      return {
        id: user.id,
        setPasswordUrl: `${base}/dashboard/set-password#token=${user.token}`,
        expiresAt: user.expiresAt.toISOString(),
      };
    },
  );
}

/** What the business earned and what its upstreams cost: overall, and for one generation. */
function reportRoutes(app: AdminApp, deps: AdminDeps): void {
  app.get(
    '/admin/v1/usage',
    {
      schema: {
        ...operatorDoc('adminUsage', 'Revenue, upstream cost and margin by model, upstream or day'),
        description:
          'Generations created in [from, to) (default: the last 30 days) that were charged or cost something upstream. Revenue is the ledger’s charges.',
        querystring: usageQuery,
        response: { 200: usageReportSchema, ...errorResponses(400, 401, 500, 503) },
      },
    },
    async (request) => {
      const to = request.query.to ? new Date(request.query.to) : new Date();
      const from = request.query.from ? new Date(request.query.from) : new Date(to.getTime() - 30 * DAY_MS);
      const report = await marginReport(deps.pool, request.query.group_by, from, to);
      return { groupBy: request.query.group_by, from: from.toISOString(), to: to.toISOString(), ...report };
    },
  );

  app.get(
    '/admin/v1/generations/:id/upstreams',
    {
      schema: {
        ...operatorDoc(
          'adminGenerationUpstreams',
          'Which upstreams a generation’s run asked, which served it, and its cost',
        ),
        description:
          'A generation the simulator ran (or that has not run yet) answers `upstream: null` and no upstream tried.',
        params: z.object({ id: z.string().describe('A generation id (gen_…)') }),
        response: {
          // Built here, not at load: the document lists named schemas in the order they are made.
          200: z
            .object({
              upstream: z.string().nullable(),
              tried: z.array(z.string()).describe('In order, across the run’s attempts'),
              costEur: z.number().nullable(),
            })
            .meta({ id: 'GenerationUpstreams' }),
          ...errorResponses(401, 404, 500, 503),
        },
      },
    },
    async (request) => {
      const routing = await generationRouting(deps.pool, request.params.id);
      if (!routing) throw new NotFoundError('There is no such generation.');
      return routing;
    },
  );
}

/** A key's spending budget, and revoking the key. */
function keyRoutes(app: AdminApp, deps: AdminDeps): void {
  app.put(
    '/admin/v1/keys/:id/budget',
    {
      schema: {
        ...operatorDoc(
          'adminSetKeyBudget',
          'Set a key’s spending budget per day, week, month or in total (UTC periods)',
        ),
        description:
          'Holds are counted against it when they are placed, atomically: a request past it is refused with 402 budget_exceeded. Released holds give budget back; charges count.',
        params: keyParams,
        body: keyBudgetBody,
        response: { 200: keyBudgetView, ...errorResponses(400, 401, 404, 500, 503) },
      },
    },
    async (request) => setBudget(deps.pool, request.params.id, request.body, operator(request.ip)),
  );

  app.delete(
    '/admin/v1/keys/:id/budget',
    {
      schema: {
        ...operatorDoc('adminRemoveKeyBudget', 'Remove a key’s budget'),
        params: keyParams,
        response: {
          200: z.object({ keyId: z.string(), removed: z.literal(true) }),
          ...errorResponses(401, 404, 500, 503),
        },
      },
    },
    async (request) => removeBudget(deps.pool, request.params.id, operator(request.ip)),
  );

  app.delete(
    '/admin/v1/keys/:id',
    {
      schema: {
        ...operatorDoc('adminRevokeKey', 'Revoke an API key; it is refused from its next request'),
        params: keyParams,
        response: {
          200: z.object({ id: z.string(), revoked: z.literal(true) }),
          ...errorResponses(401, 404, 500, 503),
        },
      },
    },
    async (request) => revokeKey(deps.pool, request.params.id, operator(request.ip)),
  );
}
