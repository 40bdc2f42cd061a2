import type { FastifyInstance, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';
import { metrics, registry } from '../../core/metrics';
import { mcToCredits } from '../../core/money';
import { requireAdminToken } from './routes';
import { errorResponses } from '../shared/schemas';

/** Counts and times every answer by its route pattern (never the raw URL, which would explode the labels). */
export function instrumentRequests(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
}

/**
 * Prometheus metrics, for the operator's scraper (Authorization: Bearer ADMIN_TOKEN): the money
 * totals and outcomes are the business's own figures, not for the public.
 */
export const metricsRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool; adminToken: string }> = async (app, deps) => {
  app.addHook('onRequest', requireAdminToken(deps.adminToken));
  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'metrics',
        tags: ['Operator'],
        summary: 'Prometheus metrics: requests, generations, holds and credits, provider and admission latency',
        security: [{ adminToken: [] }],
        response: {
          200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: z.string() } } },
          ...errorResponses(401),
        },
      },
    },
    async (_request, reply) => {
      // Holds in flight are a fact of the database, shared by every instance: read at scrape time.
      const held = await deps.pool.query<{ n: number; mc: number | null }>(
        `SELECT count(*)::int AS n, sum(amount_mc)::bigint AS mc FROM holds WHERE state = 'held'`,
      );
      metrics.holdsActive.set(held.rows[0]?.n ?? 0);
      metrics.creditsOnHold.set(mcToCredits(held.rows[0]?.mc ?? 0));
      const raw: FastifyReply = reply;
      return raw.header('Content-Type', registry.contentType).send(await registry.metrics());
    },
  );
};
