import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';

/** Healthy once both PostgreSQL and Temporal answer (DESIGN §8). */
export async function healthRoutes(app: FastifyInstance, deps: { pool: pg.Pool; client: Client }): Promise<void> {
  app.get('/health', async (_request, reply) => {
    const [database, temporal] = await Promise.all([
      deps.pool.query('SELECT 1').then(() => 'ok', () => 'unreachable'),
      deps.client.workflowService.getSystemInfo({}).then(() => 'ok', () => 'unreachable'),
    ]);
    if (database === 'ok' && temporal === 'ok') return { status: 'ok' };
    return reply.code(503).send({ status: 'unavailable', checks: { database, temporal } });
  });
}
