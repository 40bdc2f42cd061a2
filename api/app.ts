import type { Client } from '@temporalio/client';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { OutputStore } from '../core/storage';
import { adminRoutes } from './admin';
import { installErrorHandler } from './errors';
import { fileRoutes } from './files';
import { healthRoutes } from './health';
import { legacyRoutes } from './legacy';
import { createRateLimiter } from './rate-limit';
import type { RateLimiter } from './rate-limit';
import { createGenerationGateway } from './temporal-gateway';

export interface AppDeps {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  store: OutputStore;
  adminToken: string;
  syncWaitMs: number;
  admissionTimeoutMs?: number;
  defaultChatCap: number;
  limiter?: RateLimiter;
  logger?: boolean | { level: string };
}

/** Builds the HTTP API without listening: `server.ts` listens, tests call `app.inject()`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  // Chat input of any length is capped, not refused, so the body limit is generous.
  const app = Fastify({ logger: deps.logger ?? false, bodyLimit: 8 * 1024 * 1024 });
  installErrorHandler(app);
  const limiter = deps.limiter ?? createRateLimiter();
  const gateway = createGenerationGateway({ client: deps.client, taskQueue: deps.taskQueue, admissionTimeoutMs: deps.admissionTimeoutMs ?? 30_000 });

  await app.register(healthRoutes, { pool: deps.pool, client: deps.client });
  await app.register(fileRoutes, { store: deps.store });
  await app.register(adminRoutes, { pool: deps.pool, adminToken: deps.adminToken, defaultChatCap: deps.defaultChatCap });
  await app.register(legacyRoutes, { pool: deps.pool, gateway, store: deps.store, limiter, syncWaitMs: deps.syncWaitMs });
  return app;
}
