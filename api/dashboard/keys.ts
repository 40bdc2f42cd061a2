import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf } from '../../core/accounts/principal';
import { listApiKeys } from '../../core/db/accounts';
import { readKeyBudget } from '../../core/db/budgets';
import {
  budgetViewOf,
  createKey,
  createKeyBody,
  keyBudgetBody,
  keyBudgetView,
  removeBudget,
  revokeKey,
  setBudget,
} from '../../service/accounts/operations';
import { principalOf } from '../shared/auth';
import { changeErrors, errors, security, tags } from './route-docs';

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

/** The keys page's calls (mounted inside the session scope): the account's keys, issuing and revoking them, and their budgets. */
export const keyRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool }> = async (app, { pool }) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  const keyOf = async (k: Awaited<ReturnType<typeof listApiKeys>>[number]) => {
    const budget = await readKeyBudget(pool, k.id, { lock: false });
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
      data: await Promise.all((await listApiKeys(pool, principalOf(request).accountId)).map(keyOf)),
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
      const { id, key } = await createKey(pool, accountId, request.body, actorOf(principalOf(request)));
      const created = (await listApiKeys(pool, accountId)).find((k) => k.id === id)!;
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
      setBudget(pool, request.params.id, request.body, actorOf(principalOf(request)), principalOf(request).accountId),
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
      removeBudget(pool, request.params.id, actorOf(principalOf(request)), principalOf(request).accountId),
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
      revokeKey(pool, request.params.id, actorOf(principalOf(request)), principalOf(request).accountId),
  );
};
