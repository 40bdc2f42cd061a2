import type { FastifyInstance } from 'fastify';
import { batchFileLimitsOf, batchRatesOf, deadlinesOf } from '../core/config';
import { createSafeHttpClient } from '../core/net/safe-http';
import { createInputPreparer } from '../service/generation/inputs';
import { settlesWithin } from './process';
import {
  allowsPrivateNetworks,
  billingOptionsOf,
  signupOptionsOf,
  isDevelopment,
  upstreamSettings,
} from '../core/config';
import type { Services } from './services';
import { composeApi } from './api-app';

/** How long requests in flight get to finish when the API stops. */
export const API_DRAIN_MS = 2_000;

/** Builds the API on the given services and listens on the configured port. */
export async function startApiServer(s: Services): Promise<FastifyInstance> {
  const app = await composeApi({
    pool: s.pool,
    client: s.client,
    taskQueue: s.config.TEMPORAL_TASK_QUEUE,
    store: s.store,
    limiter: s.limiter,
    adminToken: s.adminToken.value,
    syncWaitMs: s.config.SYNC_WAIT_MS,
    defaultChatCap: s.config.FREE_CHAT_CAP,
    // Browser pages of the API's own origin, and of the configured ones, may call /api/mcp.
    mcpAllowedOrigins: [s.publicBaseUrl, ...s.config.MCP_ALLOWED_ORIGINS],
    deadlines: deadlinesOf(s.config),
    startPace: { room: s.config.PROVIDER_CONCURRENCY },
    batches: { rates: batchRatesOf(s.config), fileLimits: batchFileLimitsOf(s.config) },
    prepareInput: createInputPreparer({
      // Inputs on the developer's own machine or LAN are fine in development; never elsewhere.
      http: createSafeHttpClient({ policy: { allowPrivateNetworks: allowsPrivateNetworks(s.config) } }),
      store: s.store,
      publicBaseUrl: s.publicBaseUrl,
    }),
    webhooks: { secretKey: s.webhookSecretKey, developmentMode: allowsPrivateNetworks(s.config) },
    dispatcher: s.dispatcher,
    provider: s.provider,
    publicBaseUrl: s.publicBaseUrl,
    // Browsers keep Secure cookies only over https (and on localhost): plain http is for development.
    secureCookies: !isDevelopment(s.config),
    logger: s.config.LOG_LEVEL === 'silent' ? false : { level: s.config.LOG_LEVEL },
    billing: billingOptionsOf(s.config),
    signup: signupOptionsOf(s.config),
    ...(s.tracing ? { tracing: s.tracing.http } : {}),
    upstreamCallbacks: { upstreams: upstreamSettings(s.config) },
  });
  await app.listen({ port: s.config.PORT, host: s.config.HOST });
  return app;
}

/**
 * Stops taking requests and lets those in flight finish for up to `drainMs`. A request may wait
 * far longer (an image waits up to SYNC_WAIT_MS for its result), so past that its connection is
 * closed: the job itself goes on in Temporal, and a client that retries with its
 * Idempotency-Key gets the same generation.
 */
export async function stopApiServer(app: FastifyInstance, drainMs = API_DRAIN_MS): Promise<void> {
  const closed = app.close();
  if (!(await settlesWithin(closed, drainMs))) app.server.closeAllConnections();
  await closed;
}
