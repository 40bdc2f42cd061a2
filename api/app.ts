import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
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
import { instrumentRequests, metricsRoutes } from './metrics';
import { trackRouteMethods } from './methods';
import { createRateLimiter } from './rate-limit';
import type { RateLimiter } from './rate-limit';
import { v1Routes } from './v1';

export interface AppDeps {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  store: OutputStore;
  adminToken: string;
  syncWaitMs: number;
  defaultChatCap: number;
  limiter?: RateLimiter;
  /** Fetches and checks upscale inputs (SSRF-safe); without it upscale requests are refused. */
  prepareInput?: GenerationServiceDeps['prepareInput'];
  deadlines?: GenerationServiceDeps['deadlines'];
  logger?: FastifyServerOptions['logger'];
}

/** Builds the HTTP API without listening: `server.ts` listens, tests call `app.inject()`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  // Chat input of any length is capped, not refused, so the body limit is generous.
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: 8 * 1024 * 1024,
    // Every log line about a request carries its id; a caller's own x-request-id is kept when sane.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
    },
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  instrumentRequests(app);
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
    ...(deps.deadlines ? { deadlines: deps.deadlines } : {}),
  });
  // Workflow starts made after a `queued` answer finish before the app closes.
  app.addHook('onClose', () => service.drain());

  await app.register(healthRoutes, { pool: deps.pool, client: deps.client });
  await app.register(fileRoutes, { store: deps.store });
  await app.register(adminRoutes, { pool: deps.pool, adminToken: deps.adminToken, defaultChatCap: deps.defaultChatCap });
  await app.register(metricsRoutes, { pool: deps.pool, adminToken: deps.adminToken });
  await app.register(legacyRoutes, { pool: deps.pool, limiter, service });
  await app.register(v1Routes, { pool: deps.pool, limiter, service });
  return app;
}
