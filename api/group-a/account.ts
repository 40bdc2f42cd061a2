import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type pg from 'pg';
import type { GenerationService } from '../../service/generation/service';
import { usageCsv, usageReport as reportUsage } from '../../service/usage/usage';
import { principalOf } from '../shared/auth';
import { sendCsv, wantsCsv } from '../shared/csv';
import { ledgerAnswer, ledgerList, ledgerQuery } from '../shared/ledger';
import { balance, errorResponses, usageQuery, usageReport } from '../shared/schemas';
import { security, tags } from './route-docs';

/** The account's money (mounted inside the key's scope): its balance, its ledger and its usage. */
export const accountRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool; service: GenerationService }> = async (
  app,
  deps,
) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/api/v1/balance',
    {
      schema: {
        operationId: 'getBalance',
        tags,
        summary: 'Balance, active holds, plan and free chat allowance',
        security,
        response: { 200: balance, ...errorResponses(401, 429, 500, 503) },
      },
    },
    async (request) => deps.service.balance(principalOf(request)),
  );

  route.get(
    '/api/v1/ledger',
    {
      schema: {
        operationId: 'listLedger',
        tags,
        summary:
          'Every movement of the account’s credits, newest first: top-ups, holds, charges, releases, refunds, adjustments',
        description:
          '`amount` is the change of the available balance (a hold takes, a release or top-up gives, a charge turns a hold into spending and is 0), so the amounts of all entries add up to the balance. ' +
          'CSV with `Accept: text/csv` or `format=csv` (up to 10000 rows a page; the next page’s cursor in the `x-next-cursor` header).',
        security,
        querystring: ledgerQuery,
        response: {
          200: {
            description: 'A page of entries (JSON), or the same as CSV',
            content: { 'application/json': { schema: ledgerList }, 'text/csv': { schema: z.string() } },
          },
          ...errorResponses(400, 401, 429, 500, 503),
        },
      },
    },
    async (request, reply) => ledgerAnswer(deps.pool, request, reply),
  );

  route.get(
    '/api/v1/usage',
    {
      schema: {
        operationId: 'getUsage',
        tags,
        summary: 'Credits charged, generations, failures and tokens per day, model, key, kind or customer',
        description:
          'Generations created in [from, to), whichever door made them (of one customer with `customer`). Credits charged count settled generations; a failed one charges nothing. ' +
          '`group_by=customer` is what a platform invoices its own users from; CSV with `Accept: text/csv` or `format=csv`.',
        security,
        querystring: usageQuery,
        response: {
          200: {
            description: 'The report (JSON), or its groups as CSV',
            content: { 'application/json': { schema: usageReport }, 'text/csv': { schema: z.string() } },
          },
          ...errorResponses(400, 401, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const report = await reportUsage(deps.pool, principalOf(request), request.query);
      return wantsCsv(request) ? sendCsv(reply, 'usage.csv', usageCsv(report)) : report;
    },
  );
};
