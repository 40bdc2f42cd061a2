import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SCOPES } from '../../core/accounts/api-keys';
import { actorOf } from '../../core/accounts/principal';
import { GENERATION_KINDS, GENERATION_STATUSES, isFinal } from '../../core/vocabulary';
import { accountAlerts, alertsView, lowBalanceBody, setLowBalance } from '../../service/accounts/operations';
import type { GenerationService } from '../../service/generation/service';
import { principalOf } from '../shared/auth';
import { balance, generationKind, generationStatus } from '../shared/schemas';
import { changeErrors, errors, security, tags } from './route-docs';
import { overviewOf } from './events';

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

/** The overview page's calls (mounted inside the session scope): the words the pages list, the balance, and the low-balance alert. */
export const accountRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool; service: GenerationService }> = async (
  app,
  deps,
) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

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
};
