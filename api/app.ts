import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import Fastify from 'fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type pg from 'pg';
import secureJson from 'secure-json-parse';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { OutputStore } from '../core/storage/output-store';
import type { BatchService } from '../service/batches/service';
import type { GenerationService } from '../service/generation/service';
import type { WebhookService } from '../service/webhooks/endpoints';
import type { BillingService } from '../service/billing/purchases';
import type { SignupService } from '../service/accounts/signup';
import type { UpstreamCallbackService } from '../service/upstream-callbacks/callbacks';
import { adminRoutes } from './admin/routes';
import { dashboardApiRoutes } from './dashboard/api';
import type { DashboardLimits } from './dashboard/api';
import { dashboardPages } from './dashboard/pages';
import { registerDocs } from './shared/docs';
import { endEventStreams } from './shared/sse';
import type { StandingMonitor } from './shared/standing';
import type { SessionCookies } from './shared/auth';
import { answerClientError, answerFrameworkError, installErrorHandler } from './shared/errors';
import { fileRoutes } from './files';
import { healthRoutes } from './health';
import { groupCRoutes } from './group-c/routes';
import { mcpRoutes } from './mcp/route';
import { loggerOptions } from './logging';
import { instrumentRequests, metricsRoutes } from './admin/metrics';
import { trackRouteMethods } from './methods';
import type { MethodIndex } from './methods';
import type { RateLimiter } from './shared/rate-limit';
import { groupBRoutes } from './group-b/routes';
import { anthropicRoutes } from './anthropic/routes';
import { groupARoutes } from './group-a/routes';
import { groupABatchRoutes } from './group-a/batches';
import { billingRoutes } from './group-a/billing';
import { keyedWebhookDoor, webhookRoutes } from './webhooks/routes';
import { customerRoutes } from './customers/routes';
import { auditRoutes } from './audit/routes';
import { clientProtocolStrategy } from './anthropic/client-protocol';
import { keyedManagementDoor } from './shared/door';
import { upstreamCallbackRoutes } from './upstream-callbacks/routes';

/**
 * What the doors are given: the services the composition root (runtime/api-app.ts) built, and the
 * app's own settings. The app builds no service; each door takes the ones it needs.
 */
export interface AppParts {
  pool: pg.Pool;
  /** Only for the health check: every workflow is started through the services. */
  client: Client;
  store: OutputStore;
  limiter: RateLimiter;
  generations: GenerationService;
  batches: BatchService;
  /** Outgoing webhooks: endpoints, deliveries and redeliveries. */
  webhooks: WebhookService;
  /** Long-lived answers (event streams, MCP requests that wait) check their key or session while open. */
  standing: StandingMonitor;
  sessions: SessionCookies;
  /** Buying credits with Stripe; the billing routes exist only with it. */
  billing?: BillingService | undefined;
  /** Self-service sign-up; its routes and pages exist only with it. */
  signup?: SignupService | undefined;
  /** Upstreams finishing waiting video jobs (POST /providers/{fal,replicate}/webhook); mounted only with it. */
  upstreamCallbacks?: UpstreamCallbackService | undefined;
  adminToken: string;
  syncWaitMs: number;
  defaultChatCap: number;
  /** The origin of set-password links and of the dashboard; the request's own when absent. */
  publicOrigin?: string | undefined;
  dashboardLimits: DashboardLimits;
  mcp: {
    /** Origins whose browser pages may call /api/mcp (requests without an Origin header always may). */
    allowedOrigins: readonly string[];
    /** The pollInterval MCP tasks suggest, in ms (default 1000). */
    taskPollIntervalMs?: number | undefined;
  };
  logger?: FastifyServerOptions['logger'];
  /** A span per request when tracing is on (runtime/tracing.ts); absent, nothing of it runs. */
  tracing?: RequestTracing | undefined;
}

/** Server spans, made by the runtime: api/ knows no tracer. */
export interface RequestTracing {
  /** Begins the request's span with its logger, so that every line about the request carries its trace id. */
  childLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']>;
  /** Runs the rest of the request inside its span; the first hook of all. */
  onRequest: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void;
}

/** Each request gets its span first (when tracing is on), and its answer names its id. */
function identifyRequests(app: FastifyInstance, tracing: RequestTracing | undefined): void {
  if (tracing) app.addHook('onRequest', tracing.onRequest);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
}

/**
 * Route schemas are zod: they validate requests and generate the OpenAPI document. Responses are
 * written as plain JSON; their schemas type-check the handlers and the document, and a test holds
 * real responses to the document.
 */
function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

/**
 * JSON bodies, parsed without prototype pollution. An empty JSON body (a bodiless POST such as
 * cancel, from a client that sets the header anyway) means no body, not a parse error.
 */
function parseJsonBodies(app: FastifyInstance): void {
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
}

/** Builds the HTTP API without listening: runtime/api-server.ts listens, tests call `app.inject()`. */
export async function buildApp(parts: AppParts): Promise<FastifyInstance> {
  /** The route index, built once the app exists: the parser's refusals of a method are answered from it. */
  const routes: { methods?: MethodIndex } = {};
  // Chat input of any length is capped, not refused, so the body limit is generous.
  const app = Fastify({
    logger: loggerOptions(parts.logger ?? false),
    bodyLimit: 8 * 1024 * 1024,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: (err, socket) => answerClientError(err, socket, routes.methods),
    // Every log line about a request carries its id; a caller's own x-request-id is kept when sane.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      // Ours look like OpenAI's (`req_…`), which its SDKs report in their errors.
      return typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given)
        ? given
        : `req_${randomBytes(12).toString('hex')}`;
    },
    ...(parts.tracing ? { childLoggerFactory: parts.tracing.childLoggerFactory } : {}),
  });
  app.addConstraintStrategy(clientProtocolStrategy);
  identifyRequests(app, parts.tracing);
  instrumentRequests(app);
  useZodSchemas(app);
  parseJsonBodies(app);

  const methods = trackRouteMethods(app);
  routes.methods = methods;
  installErrorHandler(app, methods);
  await registerDocs(app);

  // Open live views would hold the server's close until the browsers leave.
  app.addHook('preClose', async () => endEventStreams());

  // The OpenAPI document lists the paths in the order they are mounted here.
  await mountOperatorRoutes(app, parts);
  await mountRestDoors(app, parts);
  await mountDashboard(app, parts);
  await mountProtocolDoors(app, parts);
  return app;
}

/** What the operator and the platform reach: health, output files, the admin API and metrics. */
async function mountOperatorRoutes(app: FastifyInstance, parts: AppParts): Promise<void> {
  const { pool } = parts;
  await app.register(healthRoutes, { pool, client: parts.client });
  await app.register(fileRoutes, { store: parts.store });
  await app.register(adminRoutes, {
    pool,
    adminToken: parts.adminToken,
    defaultChatCap: parts.defaultChatCap,
    publicBaseUrl: parts.publicOrigin,
  });
  await app.register(metricsRoutes, { pool, adminToken: parts.adminToken });
}

/**
 * The service's own REST doors, groups C and A, with what an API key manages beside them (billing,
 * webhooks, customers, the audit log) and the upstreams' callbacks.
 */
async function mountRestDoors(app: FastifyInstance, parts: AppParts): Promise<void> {
  const { pool, limiter, generations: service, batches, standing, sessions, billing } = parts;
  await app.register(groupCRoutes, { pool, limiter, service, sessions });
  await app.register(groupARoutes, { pool, limiter, service, standing, batchRates: batches.rates });
  await app.register(groupABatchRoutes, { pool, limiter, service, batches });
  if (billing) await app.register(billingRoutes, { pool, limiter, billing, publicBaseUrl: parts.publicOrigin });
  if (parts.upstreamCallbacks) await app.register(upstreamCallbackRoutes, { callbacks: parts.upstreamCallbacks });

  await app.register(webhookRoutes, { door: keyedWebhookDoor({ pool, limiter }), webhooks: parts.webhooks });
  const keyed = { pool, limiter };
  await app.register(customerRoutes, { pool, door: keyedManagementDoor(keyed, 'customers', ['Customers']) });
  await app.register(auditRoutes, { pool, door: keyedManagementDoor(keyed, 'audit', ['Audit log']) });
}

/** The dashboard's pages and the JSON API they call, with a session instead of a key. */
async function mountDashboard(app: FastifyInstance, parts: AppParts): Promise<void> {
  const { pool, limiter, generations: service, batches, standing, sessions, billing } = parts;
  await app.register(dashboardPages, {
    sessions,
    signupOpen: parts.signup !== undefined,
    billingOpen: billing !== undefined,
  });
  await app.register(dashboardApiRoutes, {
    pool,
    limiter,
    sessions,
    service,
    standing,
    batches,
    webhooks: parts.webhooks,
    store: parts.store,
    limits: parts.dashboardLimits,
    signup: parts.signup,
    billing,
    publicBaseUrl: parts.publicOrigin,
  });
}

/** The doors that speak other protocols: MCP, OpenAI's (group B) and Anthropic's. */
async function mountProtocolDoors(app: FastifyInstance, parts: AppParts): Promise<void> {
  const { pool, limiter, generations: service, batches, standing } = parts;
  await app.register(mcpRoutes, {
    pool,
    limiter,
    service,
    standing,
    batches,
    syncWaitMs: parts.syncWaitMs,
    allowedOrigins: parts.mcp.allowedOrigins,
    taskPollIntervalMs: parts.mcp.taskPollIntervalMs,
  });
  await app.register(groupBRoutes, { pool, limiter, service, batches, store: parts.store });
  await app.register(anthropicRoutes, { pool, limiter, service, batches, publicBaseUrl: parts.publicOrigin });
}
