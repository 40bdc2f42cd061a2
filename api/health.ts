import type { Client } from '@temporalio/client';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type pg from 'pg';
import { z } from 'zod';

const check = z.enum(['ok', 'unreachable']);

/** Healthy once both PostgreSQL and Temporal answer (DESIGN §8). */
export const healthRoutes: FastifyPluginAsyncZod<{ pool: pg.Pool; client: Client }> = async (app, deps) => {
  app.get(
    '/health',
    {
      schema: {
        operationId: 'health',
        tags: ['Operator'],
        summary: 'ok once PostgreSQL and Temporal answer',
        security: [],
        response: {
          200: z.object({ status: z.literal('ok') }),
          503: z.object({ status: z.literal('unavailable'), checks: z.object({ database: check, temporal: check }) }),
        },
      },
    },
    async (_request, reply) => {
      const [database, temporal] = await Promise.all([
        deps.pool.query('SELECT 1').then(
          () => 'ok' as const,
          () => 'unreachable' as const,
        ),
        deps.client.workflowService.getSystemInfo({}).then(
          () => 'ok' as const,
          () => 'unreachable' as const,
        ),
      ]);
      if (database === 'ok' && temporal === 'ok') return { status: 'ok' as const };
      return reply.code(503).send({ status: 'unavailable' as const, checks: { database, temporal } });
    },
  );
};
