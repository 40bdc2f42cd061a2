import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import secureJson from 'secure-json-parse';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { OutputStore } from '../core/storage';
import { createGenerationService } from '../service/generation-service';
import type { GenerationServiceDeps } from '../service/generation-service';
import { createGenerationGateway } from '../service/temporal-gateway';
import { adminRoutes } from './admin';
import { registerDocs } from './docs';
import { installErrorHandler } from './errors';
import { fileRoutes } from './files';
import { healthRoutes } from './health';
import { legacyRoutes } from './legacy';
import { trackRouteMethods } from './methods';
import { createRateLimiter } from './rate-limit';
import type { RateLimiter } from './rate-limit';
import { openaiRoutes } from './openai';
import { v1Routes } from './v1';
import type { Provider } from '../core/providers/types';

export interface AppDeps {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  store: OutputStore;
  adminToken: string;
  syncWaitMs: number;
  defaultChatCap: number;
  limiter?: RateLimiter;
  /** Fetches and checks input images (SSRF-safe); without it upscale and image-to-video are refused. */
  prepareInput?: GenerationServiceDeps['prepareInput'];
  /** Runs the chats the API streams itself (group B): the configured upstreams, or the simulator. */
  provider?: Provider;
  logger?: boolean | { level: string };
}

/** Builds the HTTP API without listening: `server.ts` listens, tests call `app.inject()`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  // Chat input of any length is capped, not refused, so the body limit is generous.
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: 8 * 1024 * 1024,
    // Every answer names its request (`x-request-id`), as OpenAI's API does and its SDKs report
    // in their errors; support can find it in the logs. Our own ids: a client's would be trusted.
    genReqId: () => `req_${randomBytes(12).toString('hex')}`,
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // Route schemas are zod: they validate requests and generate the OpenAPI document. Responses are
  // written as plain JSON; their schemas type-check the handlers and the document, and a test holds
  // real responses to the document.
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // An empty JSON body (a bodiless POST such as cancel, from a client that sets the header anyway)
  // means no body, not a parse error.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      done(Object.assign(new Error(`The request body is not valid JSON: ${(err as Error).message}`), { statusCode: 400 }), undefined);
    }
  });

  const methods = trackRouteMethods(app);
  installErrorHandler(app, methods);
  await registerDocs(app);

  const limiter = deps.limiter ?? createRateLimiter();
  const service = createGenerationService({
    pool: deps.pool,
    gateway: createGenerationGateway({ client: deps.client, taskQueue: deps.taskQueue }),
    store: deps.store,
    syncWaitMs: deps.syncWaitMs,
    ...(deps.prepareInput ? { prepareInput: deps.prepareInput } : {}),
    ...(deps.provider ? { provider: deps.provider } : {}),
    log: (message, err) => app.log.warn({ err }, message),
  });

  await app.register(healthRoutes, { pool: deps.pool, client: deps.client });
  await app.register(fileRoutes, { store: deps.store });
  await app.register(adminRoutes, { pool: deps.pool, adminToken: deps.adminToken, defaultChatCap: deps.defaultChatCap });
  await app.register(legacyRoutes, { pool: deps.pool, limiter, service });
  await app.register(v1Routes, { pool: deps.pool, limiter, service });
  await app.register(openaiRoutes, { pool: deps.pool, limiter, service, store: deps.store });
  return app;
}
