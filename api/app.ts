import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type pg from 'pg';
import secureJson from 'secure-json-parse';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { NetworkPolicy } from '../core/net/address-policy';
import type { OutputStore } from '../core/storage/output-store';
import { createSecretBox } from '../core/webhooks/secret-box';
import { batchFileLimitsOf, batchRatesOf, loadConfig } from '../core/config';
import { createBatchService } from '../service/batches/service';
import type { BatchServiceDeps } from '../service/batches/service';
import { createGenerationService } from '../service/generation/service';
import type { GenerationServiceDeps } from '../service/generation/service';
import { createGenerationGateway } from '../service/generation/temporal-gateway';
import { createWebhookDispatcher } from '../service/webhooks/dispatch';
import { createSessionService } from '../service/accounts/sessions';
import { createWebhookService } from '../service/webhooks/endpoints';
import { adminRoutes } from './admin/routes';
import { dashboardApiRoutes, DEFAULT_DASHBOARD_LIMITS } from './dashboard/api';
import type { DashboardLimits } from './dashboard/api';
import { dashboardPages } from './dashboard/pages';
import { registerDocs } from './shared/docs';
import { endEventStreams } from './shared/sse';
import { createStandingMonitor } from './shared/standing';
import { answerClientError, answerFrameworkError, installErrorHandler } from './shared/errors';
import { fileRoutes } from './files';
import { healthRoutes } from './health';
import { legacyRoutes } from './group-c/routes';
import { mcpRoutes } from './mcp/route';
import { loggerOptions } from './logging';
import { instrumentRequests, metricsRoutes } from './admin/metrics';
import { trackRouteMethods } from './methods';
import { createRateLimiter } from './shared/rate-limit';
import type { RateLimiter } from './shared/rate-limit';
import { openaiRoutes } from './group-b/routes';
import { anthropicRoutes } from './anthropic/routes';
import { v1Routes } from './group-a/routes';
import { v1BatchRoutes } from './group-a/batches';
import { billingRoutes } from './group-a/billing';
import type { BillingOptions } from '../service/billing/purchases';
import { createSignupService } from '../service/accounts/signup';
import type { SignupOptions } from '../service/accounts/signup';
import { keyedWebhookDoor, webhookRoutes } from './webhooks/routes';
import { customerRoutes } from './customers/routes';
import { auditRoutes } from './audit/routes';
import { keyedManagementDoor } from './shared/door';
import type { Provider } from '../core/providers/types';
import { createUpstreamCallbackService } from '../service/upstream-callbacks/callbacks';
import type { UpstreamCallbackDeps } from '../service/upstream-callbacks/callbacks';
import { upstreamCallbackRoutes } from './upstream-callbacks/routes';

export interface AppDeps {
  pool: pg.Pool;
  client: Client;
  taskQueue: string;
  store: OutputStore;
  adminToken: string;
  syncWaitMs: number;
  defaultChatCap: number;
  limiter?: RateLimiter;
  /** Origins whose browser pages may call /api/mcp (requests without an Origin header always may). */
  mcpAllowedOrigins?: readonly string[];
  /** The pollInterval MCP tasks suggest, in ms (default 1000). */
  mcpTaskPollIntervalMs?: number;
  /** Fetches and checks input images (SSRF-safe); without it upscale and image-to-video are refused. */
  prepareInput?: GenerationServiceDeps['prepareInput'];
  /** Runs the chats the API streams itself (group B): the configured upstreams, or the simulator. */
  provider?: Provider;
  deadlines?: GenerationServiceDeps['deadlines'];
  logger?: FastifyServerOptions['logger'];
  /** Webhook registration and replays; without it creating or rotating an endpoint answers 503. */
  webhooks?: AppWebhookOptions;
  /** PUBLIC_BASE_URL: the origin of set-password links and of the dashboard; the request's own when absent. */
  publicBaseUrl?: string;
  /** Session cookies are `Secure` unless this is false (development mode over plain http). */
  secureCookies?: boolean;
  dashboardLimits?: Partial<DashboardLimits>;
  /** Buying credits with Stripe; the billing routes exist only with it. */
  billing?: BillingOptions | undefined;
  /** Self-service sign-up (SIGNUP=open); its routes and pages exist only with it. */
  signup?: SignupOptions | undefined;
  /** Webhooks from upstreams that finish waiting video jobs (POST /providers/{fal,replicate}/webhook). */
  upstreamCallbacks?: Omit<UpstreamCallbackDeps, 'pool' | 'client'> | undefined;
  /** A span per request when tracing is on (runtime/tracing.ts); absent, nothing of it runs. */
  tracing?: RequestTracing;
  /** Batches: their price per kind, what an input file may be, and (tests) how long the completion window lasts. */
  batches?: Partial<Pick<BatchServiceDeps, 'rates' | 'fileLimits' | 'completionWindowMs'>>;
}

/** Server spans, made by the runtime: api/ knows no tracer. */
export interface RequestTracing {
  /** Begins the request's span with its logger, so that every line about the request carries its trace id. */
  childLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']>;
  /** Runs the rest of the request inside its span; the first hook of all. */
  onRequest: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;
}

export interface AppWebhookOptions {
  /** WEBHOOK_SECRET_KEY: seals endpoint secrets (the workers open them with the same key). */
  secretKey: string;
  /** Default `<taskQueue>-webhooks`. */
  taskQueue?: string;
  /** Development mode: plain http to loopback, and private networks, may be registered. */
  developmentMode: boolean;
  /** Which addresses a URL may name or resolve to; the mode's policy when absent. */
  policy?: NetworkPolicy;
  resolve?: (hostname: string) => Promise<string[]>;
  /** A compressed retry schedule for redeliveries (tests). */
  retryScheduleMs?: readonly number[];
  clock?: () => number;
}

/** Builds the HTTP API without listening: `server.ts` listens, tests call `app.inject()`. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  // Chat input of any length is capped, not refused, so the body limit is generous.
  const app = Fastify({
    logger: loggerOptions(deps.logger ?? false),
    bodyLimit: 8 * 1024 * 1024,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // Every log line about a request carries its id; a caller's own x-request-id is kept when sane.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      // Ours look like OpenAI's (`req_…`), which its SDKs report in their errors.
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given)
        ? given
        : `req_${randomBytes(12).toString('hex')}`;
    },
    ...(deps.tracing ? { childLoggerFactory: deps.tracing.childLoggerFactory } : {}),
  });
  if (deps.tracing) app.addHook('onRequest', deps.tracing.onRequest);
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
      done(
        Object.assign(new Error(`The request body is not valid JSON: ${(err as Error).message}`), { statusCode: 400 }),
        undefined,
      );
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
    rateWindows: limiter,
    ...(deps.prepareInput ? { prepareInput: deps.prepareInput } : {}),
    ...(deps.deadlines ? { deadlines: deps.deadlines } : {}),
    ...(deps.provider ? { provider: deps.provider } : {}),
    log: (message, err) => app.log.warn({ err }, message),
  });
  const defaults = loadConfig({});
  const batches = createBatchService({
    pool: deps.pool,
    client: deps.client,
    taskQueue: deps.taskQueue,
    store: deps.store,
    rates: deps.batches?.rates ?? batchRatesOf(defaults),
    fileLimits: deps.batches?.fileLimits ?? batchFileLimitsOf(defaults),
    ...(deps.batches?.completionWindowMs === undefined ? {} : { completionWindowMs: deps.batches.completionWindowMs }),
    serves: service.serves,
    live: service.live,
    log: (message, err) => app.log.warn({ err }, message),
  });
  // Workflow starts made after a `queued` answer finish before the app closes.
  app.addHook('onClose', async () => {
    await service.drain();
    await service.close();
  });

  // Long-lived answers (event streams, MCP requests that wait) check their key or session while open.
  const standing = createStandingMonitor({
    pool: deps.pool,
    log: (message, err) => app.log.warn({ err }, message),
  });
  app.addHook('onClose', async () => standing.close());

  const publicOrigin = deps.publicBaseUrl ? new URL(deps.publicBaseUrl).origin : undefined;
  // One service for both doors that buy credits: the API's route and the dashboard's Billing page.
  // Stripe's client is loaded only when billing is configured.
  const billing = deps.billing
    ? (await import('../service/billing/purchases')).createBillingService({ pool: deps.pool, options: deps.billing })
    : undefined;
  const sessions = {
    service: createSessionService({ pool: deps.pool }),
    secure: deps.secureCookies ?? true,
    origins: publicOrigin ? [publicOrigin] : [],
  };

  await app.register(healthRoutes, { pool: deps.pool, client: deps.client });
  await app.register(fileRoutes, { store: deps.store });
  await app.register(adminRoutes, {
    pool: deps.pool,
    adminToken: deps.adminToken,
    defaultChatCap: deps.defaultChatCap,
    publicBaseUrl: publicOrigin,
  });
  await app.register(metricsRoutes, { pool: deps.pool, adminToken: deps.adminToken });
  await app.register(legacyRoutes, { pool: deps.pool, limiter, service, sessions });
  await app.register(v1Routes, { pool: deps.pool, limiter, service, standing, batchRates: batches.rates });
  await app.register(v1BatchRoutes, { pool: deps.pool, limiter, service, batches });
  if (billing) {
    await app.register(billingRoutes, { pool: deps.pool, limiter, billing, publicBaseUrl: publicOrigin });
  }

  if (deps.upstreamCallbacks) {
    const webhooks = createUpstreamCallbackService({
      pool: deps.pool,
      client: deps.client,
      log: (message, err) => app.log.warn({ err }, message),
      ...deps.upstreamCallbacks,
    });
    await app.register(upstreamCallbackRoutes, { webhooks });
  }

  const hooks = deps.webhooks;
  const webhooks = createWebhookService({
    pool: deps.pool,
    secretBox: hooks && createSecretBox(hooks.secretKey),
    dispatcher: createWebhookDispatcher({
      client: deps.client,
      taskQueue: hooks?.taskQueue ?? `${deps.taskQueue}-webhooks`,
      retryScheduleMs: hooks?.retryScheduleMs,
    }),
    urlRules: {
      developmentMode: hooks?.developmentMode ?? false,
      policy: hooks?.policy ?? { allowPrivateNetworks: hooks?.developmentMode ?? false },
      ...(hooks?.resolve ? { resolve: hooks.resolve } : {}),
    },
    ...(hooks?.clock ? { clock: hooks.clock } : {}),
  });
  await app.register(webhookRoutes, { door: keyedWebhookDoor({ pool: deps.pool, limiter }), webhooks });
  const keyed = { pool: deps.pool, limiter };
  await app.register(customerRoutes, {
    pool: deps.pool,
    door: keyedManagementDoor(keyed, 'customers', ['Customers']),
  });
  await app.register(auditRoutes, { pool: deps.pool, door: keyedManagementDoor(keyed, 'audit', ['Audit log']) });
  await app.register(dashboardPages, {
    sessions,
    signupOpen: deps.signup !== undefined,
    billingOpen: billing !== undefined,
  });
  await app.register(dashboardApiRoutes, {
    pool: deps.pool,
    limiter,
    sessions,
    service,
    standing,
    batches,
    webhooks,
    store: deps.store,
    limits: { ...DEFAULT_DASHBOARD_LIMITS, ...deps.dashboardLimits },
    signup: deps.signup ? createSignupService({ pool: deps.pool, options: deps.signup }) : undefined,
    billing,
    publicBaseUrl: publicOrigin,
  });
  // Open live views would hold the server's close until the browsers leave.
  app.addHook('preClose', async () => endEventStreams());
  await app.register(mcpRoutes, {
    pool: deps.pool,
    limiter,
    service,
    standing,
    batches,
    syncWaitMs: deps.syncWaitMs,
    allowedOrigins: deps.mcpAllowedOrigins ?? [],
    taskPollIntervalMs: deps.mcpTaskPollIntervalMs,
  });
  await app.register(openaiRoutes, { pool: deps.pool, limiter, service, batches, store: deps.store });
  await app.register(anthropicRoutes, { pool: deps.pool, limiter, service });
  return app;
}
