import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type pg from 'pg';
import { buildApp } from '../api/app';
import type { RequestTracing } from '../api/app';
import { DEFAULT_DASHBOARD_LIMITS } from '../api/dashboard/api';
import type { DashboardLimits } from '../api/dashboard/api';
import { createRateLimiter } from '../api/shared/rate-limit';
import type { RateLimiter } from '../api/shared/rate-limit';
import { createStandingMonitor } from '../api/shared/standing';
import { batchFileLimitsOf, batchRatesOf, loadConfig } from '../core/config';
import type { NetworkPolicy } from '../core/net/address-policy';
import type { Provider } from '../core/providers/types';
import type { OutputStore } from '../core/storage/output-store';
import { createSecretBox } from '../core/webhooks/secret-box';
import { createSessionService } from '../service/accounts/sessions';
import { createSignupService } from '../service/accounts/signup';
import type { SignupOptions } from '../service/accounts/signup';
import type { BillingOptions } from '../service/billing/purchases';
import { createBatchService } from '../service/batches/service';
import type { BatchServiceDeps } from '../service/batches/service';
import { createGenerationService } from '../service/generation/service';
import type { GenerationServiceDeps } from '../service/generation/service';
import { createGenerationGateway } from '../service/generation/temporal-gateway';
import { createUpstreamCallbackService } from '../service/upstream-callbacks/callbacks';
import type { UpstreamCallbackDeps } from '../service/upstream-callbacks/callbacks';
import { createWebhookDispatcher } from '../service/webhooks/dispatch';
import type { WebhookDispatcher } from '../service/webhooks/dispatch';
import { createWebhookService } from '../service/webhooks/endpoints';

/** What the API process is built from: its connections and settings. `startApiServer` and the tests give them. */
export interface ApiInputs {
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
  /** How an account's starts past what it can run are spread: room is PROVIDER_CONCURRENCY. None when absent. */
  startPace?: GenerationServiceDeps['startPace'];
  logger?: FastifyServerOptions['logger'];
  /** Outgoing webhooks' registration and redeliveries; without it creating or rotating an endpoint answers 503. */
  webhooks?: WebhookOptions;
  /** Hands new deliveries to Temporal; the process's own (runtime/services.ts) when it runs workers too. */
  dispatcher?: WebhookDispatcher;
  /** PUBLIC_BASE_URL: the origin of set-password links and of the dashboard; the request's own when absent. */
  publicBaseUrl?: string;
  /** Session cookies are `Secure` unless this is false (development mode over plain http). */
  secureCookies?: boolean;
  dashboardLimits?: Partial<DashboardLimits>;
  /** Buying credits with Stripe; the billing routes exist only with it. */
  billing?: BillingOptions | undefined;
  /** Self-service sign-up (SIGNUP=open); its routes and pages exist only with it. */
  signup?: SignupOptions | undefined;
  /** Upstreams finishing waiting video jobs (POST /providers/{fal,replicate}/webhook). */
  upstreamCallbacks?: Omit<UpstreamCallbackDeps, 'pool' | 'client'> | undefined;
  /** A span per request when tracing is on (runtime/tracing.ts); absent, nothing of it runs. */
  tracing?: RequestTracing;
  /** Batches: their price per kind, what an input file may be, and (tests) how long the completion window lasts. */
  batches?: Partial<Pick<BatchServiceDeps, 'rates' | 'fileLimits' | 'completionWindowMs'>>;
}

export interface WebhookOptions {
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

/** An API built with no configuration of its batches (tests) takes the configuration's defaults. */
const DEFAULTS = loadConfig({});

/**
 * Builds the API's services once (generations with their Temporal gateway, batches, webhooks with
 * their dispatcher, sessions, billing, sign-up, upstream callbacks) and hands them to the app,
 * which mounts the doors. The services close with the app.
 */
export async function composeApi(inputs: ApiInputs): Promise<FastifyInstance> {
  // The services warn through the app's logger, which Fastify makes with the app; nothing warns before it serves.
  const built: { app?: FastifyInstance } = {};
  const log = (message: string, err: unknown): void => built.app?.log.warn({ err }, message);
  const { pool, client, taskQueue, store } = inputs;
  const limiter = inputs.limiter ?? createRateLimiter();
  const hooks = inputs.webhooks;
  const webhooks = createWebhookService({
    pool,
    secretBox: hooks && createSecretBox(hooks.secretKey),
    dispatcher:
      inputs.dispatcher ??
      createWebhookDispatcher({
        client,
        taskQueue: hooks?.taskQueue ?? `${taskQueue}-webhooks`,
        retryScheduleMs: hooks?.retryScheduleMs,
      }),
    urlRules: {
      developmentMode: hooks?.developmentMode ?? false,
      policy: hooks?.policy ?? { allowPrivateNetworks: hooks?.developmentMode ?? false },
      ...(hooks?.resolve ? { resolve: hooks.resolve } : {}),
    },
    ...(hooks?.clock ? { clock: hooks.clock } : {}),
  });
  const generations = createGenerationService({
    pool,
    gateway: createGenerationGateway({ client, taskQueue }),
    store,
    syncWaitMs: inputs.syncWaitMs,
    rateWindows: limiter,
    ...(inputs.prepareInput ? { prepareInput: inputs.prepareInput } : {}),
    ...(inputs.deadlines ? { deadlines: inputs.deadlines } : {}),
    ...(inputs.startPace ? { startPace: inputs.startPace } : {}),
    ...(inputs.provider ? { provider: inputs.provider } : {}),
    prepareCallback: webhooks.callbacks.prepare,
    log,
  });
  const batches = createBatchService({
    pool,
    client,
    taskQueue,
    store,
    rates: inputs.batches?.rates ?? batchRatesOf(DEFAULTS),
    fileLimits: inputs.batches?.fileLimits ?? batchFileLimitsOf(DEFAULTS),
    ...(inputs.batches?.completionWindowMs === undefined
      ? {}
      : { completionWindowMs: inputs.batches.completionWindowMs }),
    serves: generations.serves,
    live: generations.live,
    prepareCallback: webhooks.callbacks.prepare,
    log,
  });
  const standing = createStandingMonitor({ pool, log });
  const publicOrigin = inputs.publicBaseUrl ? new URL(inputs.publicBaseUrl).origin : undefined;
  // One service for both doors that buy credits: the API's route and the dashboard's Billing page.
  // Stripe's client is loaded only when billing is configured.
  const billing = inputs.billing
    ? (await import('../service/billing/purchases')).createBillingService({ pool, options: inputs.billing })
    : undefined;

  const app = await buildApp({
    pool,
    client,
    store,
    limiter,
    generations,
    batches,
    webhooks,
    standing,
    sessions: {
      service: createSessionService({ pool }),
      secure: inputs.secureCookies ?? true,
      origins: publicOrigin ? [publicOrigin] : [],
    },
    billing,
    signup: inputs.signup ? createSignupService({ pool, options: inputs.signup }) : undefined,
    upstreamCallbacks: inputs.upstreamCallbacks
      ? createUpstreamCallbackService({ pool, client, log, ...inputs.upstreamCallbacks })
      : undefined,
    adminToken: inputs.adminToken,
    syncWaitMs: inputs.syncWaitMs,
    defaultChatCap: inputs.defaultChatCap,
    publicOrigin,
    dashboardLimits: { ...DEFAULT_DASHBOARD_LIMITS, ...inputs.dashboardLimits },
    mcp: { allowedOrigins: inputs.mcpAllowedOrigins ?? [], taskPollIntervalMs: inputs.mcpTaskPollIntervalMs },
    logger: inputs.logger,
    tracing: inputs.tracing,
  });
  built.app = app;
  // Workflow starts made after a `queued` answer finish before the app closes.
  app.addHook('onClose', async () => {
    await generations.drain();
    await generations.close();
    standing.close();
  });
  return app;
}
