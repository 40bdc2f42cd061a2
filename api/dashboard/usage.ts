import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { usageCsv, usageReport as reportUsage } from '../../service/usage/usage';
import { principalOf } from '../shared/auth';
import { sendCsv, wantsCsv } from '../shared/csv';
import { ledgerAnswer, ledgerList, ledgerQuery } from '../shared/ledger';
import { usageQuery, usageReport } from '../shared/schemas';
import { errors, security, tags } from './route-docs';

/** What the account spent (mounted inside the session scope): usage grouped as asked, and the ledger, each also as CSV. */
export const usageRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool }> = async (app, { pool }) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

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
      const report = await reportUsage(pool, principalOf(request), request.query);
      return wantsCsv(request) ? sendCsv(reply, 'usage.csv', usageCsv(report)) : report;
    },
  );

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
    async (request, reply) => ledgerAnswer(pool, request, reply),
  );
};
