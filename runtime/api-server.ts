import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createInputPreparer } from '../service/inputs';
import type { Services } from './services';

/** Builds the API on the given services and listens on the configured port. */
export async function startApiServer(s: Services): Promise<FastifyInstance> {
  const app = await buildApp({
    pool: s.pool,
    client: s.client,
    taskQueue: s.config.TEMPORAL_TASK_QUEUE,
    store: s.store,
    limiter: s.limiter,
    adminToken: s.adminToken.value,
    syncWaitMs: s.config.SYNC_WAIT_MS,
    defaultChatCap: s.config.FREE_CHAT_CAP,
    prepareInput: createInputPreparer({
      // Inputs on the developer's own machine or LAN are fine in development; never elsewhere.
      http: createSafeHttpClient({ policy: { allowPrivateNetworks: s.config.NODE_ENV === 'development' } }),
      store: s.store,
      publicBaseUrl: s.publicBaseUrl,
    }),
    provider: s.provider,
    logger: s.config.LOG_LEVEL === 'silent' ? false : { level: s.config.LOG_LEVEL },
  });
  await app.listen({ port: s.config.PORT, host: s.config.HOST });
  return app;
}
