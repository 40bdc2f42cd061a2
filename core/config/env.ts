import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { optionalHttpUrl, optionalText, optionalUrl, originList, port, unsetIfEmpty } from './fields';
import { upstreamsJson } from './upstreams';

/** A kind's deadline: a second to a week. */
const deadlineMs = (fallback: number) =>
  z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(fallback);

/**
 * Every environment variable the service reads, with its default and its limits (docs/configuration.md
 * describes each). One variable's own rules live here; rules across variables are checked by
 * `loadConfig` (core/config.ts).
 */
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.string().min(16, 'must be at least 16 characters').optional(),
  ),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: optionalUrl,
  TEMPORAL_ADDRESS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[^:\s]+:\d+$/, 'must be host:port')
      .optional(),
  ),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('generations'),
  TEMPORAL_UI_PORT: port(8233),
  TEMPORAL_PORT: port(7233),
  EMBEDDED_PG_PORT: port(5433),
  /** A worker on its own serves GET /metrics on this port (the API serves its own on PORT). */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  PUBLIC_BASE_URL: optionalUrl,
  /**
   * Where upstreams call back (POST /providers/fal/webhook, /providers/replicate/webhook): the
   * public origin of the API; PUBLIC_BASE_URL when unset. With neither, no webhook is asked for and
   * waiting videos are polled at each upstream's pollMs (still holding no worker slot).
   */
  UPSTREAM_CALLBACK_BASE_URL: optionalHttpUrl,
  /** Buying credits with Stripe Checkout: on when both are set. */
  STRIPE_SECRET_KEY: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(8).optional()),
  STRIPE_WEBHOOK_SECRET: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(8).optional()),
  /** Another Stripe API base (stripe-mock); Stripe's own when unset. */
  STRIPE_API_URL: optionalUrl,
  /** Alerts by email: an SMTP server, `smtp://user:pass@host:587` or `smtps://…:465`; no email when unset. */
  SMTP_URL: z.preprocess(
    unsetIfEmpty,
    z.url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' }).optional(),
  ),
  /** Self-service sign-up: `open` lets anyone create a `free` account from the dashboard, verified by email. */
  SIGNUP: z.enum(['closed', 'open']).default('closed'),
  /** The credits a signed-up account starts with (its free chat replies: FREE_CHAT_CAP). */
  SIGNUP_CREDITS: z.coerce.number().min(0).max(1_000_000).default(10),
  /** The sender of those emails, `Name <address>` or an address. */
  MAIL_FROM: z.preprocess(unsetIfEmpty, z.string().min(3).max(320).default('Generation service <alerts@localhost>')),
  /** The fewest and most credits one checkout buys (1 credit = 0.01 EUR). */
  BILLING_MIN_CREDITS: z.coerce.number().int().min(1).default(500),
  BILLING_MAX_CREDITS: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
  /** Signs output URLs; generated and kept in DATA_DIR when not given. */
  URL_SIGNING_SECRET: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(16).optional()),
  /** How long the API waits for an image or chat to finish before answering with its current state. */
  SYNC_WAIT_MS: z.coerce.number().int().min(0).max(300_000).default(60_000),
  /** How long the API waits for a hold to be placed or refused before answering 503 (and cancelling). */
  ADMISSION_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  SIM_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).optional(),
  FREE_CHAT_CAP: z.coerce.number().int().min(0).default(20),
  VIDEO_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(5),
  /**
   * What a worker process serves: `workflows` (workflows, ledger steps, slot waits), `provider`
   * (provider runs, on the task queue `<TEMPORAL_TASK_QUEUE>-provider`), or `all` (both).
   */
  WORKER_ROLE: z.enum(['all', 'workflows', 'provider']).default('all'),
  /**
   * Worker Versioning (docs/operations.md): with a build id, every worker of the process polls as
   * version `<WORKER_DEPLOYMENT_NAME>:<WORKER_BUILD_ID>` and workflows stay pinned to the version
   * they started on; unset, workers are unversioned (patched() alone keeps old histories working).
   */
  WORKER_BUILD_ID: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[A-Za-z0-9._+-]{1,64}$/, 'letters, digits, . _ + - (at most 64)')
      .optional(),
  ),
  WORKER_DEPLOYMENT_NAME: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .default('gensvc'),
  /**
   * Workflows a workflow worker keeps in memory between their tasks (~0.5 MB each, measured); one
   * that was evicted is replayed from its history at its next task. Videos wait long, so a
   * thousand in flight should not mean a thousand in memory (docs/decisions/0018-worker-resources.md).
   */
  WORKFLOW_CACHE_SIZE: z.coerce.number().int().min(2).max(100_000).default(100),
  /** Provider runs one worker process has under way at once, from the provider queue or in place. */
  PROVIDER_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(200),
  /** Per kind: past this a generation fails with `timeout` and its hold is released (DESIGN §5). */
  DEADLINE_IMAGE_MS: deadlineMs(10 * 60_000),
  DEADLINE_CHAT_MS: deadlineMs(10 * 60_000),
  DEADLINE_VIDEO_MS: deadlineMs(2 * 3_600_000),
  /** A batch's price, per kind, as a percentage of what its lines cost one by one (shown in /api/v1/models). */
  BATCH_PRICE_PERCENT_IMAGE: z.coerce.number().int().min(1).max(100).default(50),
  BATCH_PRICE_PERCENT_VIDEO: z.coerce.number().int().min(1).max(100).default(50),
  BATCH_PRICE_PERCENT_CHAT: z.coerce.number().int().min(1).max(100).default(50),
  /** Lines of one batch in flight at once, and of all of one account's batches (a video batch also at most VIDEO_CONCURRENCY). */
  BATCH_LINES_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(50),
  BATCH_ACCOUNT_LINES_IN_FLIGHT: z.coerce.number().int().min(1).max(10_000).default(100),
  /** The largest file POST /v1/files takes for a batch, its most lines, and its longest line. */
  BATCH_FILE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(1024 * 1024 * 1024)
    .default(100 * 1024 * 1024),
  BATCH_MAX_LINES: z.coerce.number().int().min(1).max(1_000_000).default(50_000),
  BATCH_LINE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** How often the reconciler looks for holds left behind, and how old a hold must be to be looked at. */
  RECONCILE_EVERY_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(60_000),
  RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(86_400_000).default(120_000),
  DEADLINE_UPSCALE_MS: deadlineMs(2 * 3_600_000),
  // Outbound requests made for a key holder (webhook deliveries, upscale inputs, group B image_url)
  // may reach loopback and private networks: for a receiver on a developer's own machine. Unset:
  // allowed in development mode only. `false` gives a development start production's rule.
  ALLOW_PRIVATE_NETWORKS: z.preprocess(unsetIfEmpty, z.stringbool().optional()),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Seals webhook secrets at rest (AES-256-GCM); generated and kept in DATA_DIR when not given. */
  WEBHOOK_SECRET_KEY: z.preprocess(unsetIfEmpty, z.string().min(16, 'must be at least 16 characters').optional()),
  /** Task queue of webhook deliveries; default `<TEMPORAL_TASK_QUEUE>-webhooks`. */
  TEMPORAL_WEBHOOK_TASK_QUEUE: optionalText,
  /** Delivery attempts in flight at once per worker (each may wait up to 15 s on its receiver). */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(50),
  /** Days a finished delivery and its attempts stay in the log (GET …/deliveries); pending ones stay until they finish. */
  WEBHOOK_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** Origins whose browser pages may call /api/mcp besides the API's own (PUBLIC_BASE_URL); clients that send no Origin always may. */
  MCP_ALLOWED_ORIGINS: originList,
  /** Rate-limit windows shared by every API instance; without it each instance counts on its own. */
  REDIS_URL: z.preprocess(
    unsetIfEmpty,
    z
      .string()
      .regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL')
      .optional(),
  ),
  /** Output files in an S3-compatible bucket (set S3_BUCKET to enable); the local DATA_DIR/outputs otherwise. */
  S3_BUCKET: optionalText,
  /** Where the API and the workers reach the store; unset for AWS S3 itself. */
  S3_ENDPOINT: optionalHttpUrl,
  /** Where clients reach the store, when not at S3_ENDPOINT (e.g. a container name inside, localhost outside). */
  S3_PUBLIC_ENDPOINT: optionalHttpUrl,
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: optionalText,
  S3_SECRET_ACCESS_KEY: optionalText,
  /** `bucket` in the path rather than the host name; defaults to true when S3_ENDPOINT is set (MinIO, SeaweedFS). */
  S3_FORCE_PATH_STYLE: z.preprocess(unsetIfEmpty, z.stringbool().optional()),
  /**
   * Tracing (OpenTelemetry): the OTLP/HTTP collector spans are sent to (`http://collector:4318`;
   * traces go to its /v1/traces). Unset, tracing is off and nothing of OpenTelemetry is loaded.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalHttpUrl,
  /** The service name spans carry; by default gensvc-api, gensvc-worker, or gensvc (`npm start`). */
  OTEL_SERVICE_NAME: optionalText,
  /** Real upstreams per model, as JSON (see `upstreamsSchema`); the simulator runs every model otherwise. */
  UPSTREAMS_JSON: upstreamsJson((v) => v),
  /** The same JSON in a file (keeps keys out of the environment); not with UPSTREAMS_JSON. */
  UPSTREAMS_FILE: upstreamsJson((path) => readFileSync(path, 'utf8')),
});
