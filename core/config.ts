import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { listModels } from './catalogue/models';

/**
 * The one place configuration is read. Entry points call `loadConfig(process.env)` once and pass
 * the typed result down; nothing else reads the environment.
 */
const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const optionalUrl = z.preprocess(unsetIfEmpty, z.string().url().optional());
const optionalText = z.preprocess(unsetIfEmpty, z.string().min(1).optional());
const optionalHttpUrl = z.preprocess(
  unsetIfEmpty,
  z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
);
const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** A comma-separated list of web origins (`https://app.example.com`), as origins. */
const originList = z
  .string()
  .default('')
  .transform((value, ctx) =>
    value
      .split(',')
      .map((o) => o.trim())
      .filter((o) => o !== '')
      .map((o) => {
        const url = URL.canParse(o) ? new URL(o) : undefined;
        if (!url || !/^https?:$/.test(url.protocol) || url.origin !== o.replace(/\/$/, '')) {
          ctx.addIssue({ code: 'custom', message: `'${o}' is not an origin such as https://app.example.com` });
        }
        return url?.origin ?? o;
      }),
  );

/**
 * Real model providers (DESIGN §7), by model: which catalogue model goes to which upstreams, where
 * they are, their keys, and each upstream's own name for the model. Models not listed run on the
 * simulator. `openai`: an OpenAI-compatible API (chat and images); `queue-video`: a queue-style
 * video API (submit, then poll; fal.ai's queue protocol); `replicate`: Replicate's predictions API.
 *
 * A model may be listed by several upstreams: they are asked in `priority` order (lower first; by
 * default the order of the list), `weight` sharing the load among equals, and the next one is asked
 * when one fails on its side before producing anything (core/providers/router.ts).
 */
const upstreamModelSchema = z.union([
  z.string().min(1),
  z.object({
    /** The upstream's name for the model (queue-video: its path; replicate: `owner/name` or a version id). */
    model: z.string().min(1),
    priority: z.number().int().min(0).max(1_000).optional(),
    weight: z.number().positive().max(1_000).default(1),
    /** What one unit costs us at this upstream, in EUR: an image, a second of video, 1,000 output tokens. */
    costEur: z.number().min(0).max(1_000).optional(),
  }),
]);
const upstreamSchema = z.object({
  name: z.string().min(1).max(50),
  protocol: z.enum(['openai', 'anthropic', 'queue-video', 'replicate']),
  baseUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  apiKey: z.string().min(1).optional(),
  /** How the key is sent: `Bearer <key>` (OpenAI, Replicate), `Key <key>` (fal.ai) or `x-api-key: <key>` (Anthropic). */
  auth: z.enum(['bearer', 'key', 'x-api-key']).optional(),
  /** Catalogue model id → the upstream's name for it, or that name with its priority, weight and cost. */
  models: z
    .record(z.string(), upstreamModelSchema)
    .refine((m) => Object.keys(m).length > 0, 'must name at least one model'),
  /** Until an answer starts, and between two pieces of a stream. */
  timeoutMs: z.number().int().min(100).max(3_600_000).default(120_000),
  /** queue-video and replicate: how often a running job is polled. */
  pollMs: z.number().int().min(10).max(600_000).default(2_000),
  /**
   * queue-video and replicate: a video waits for the upstream's webhook holding no worker slot, and
   * is checked this often meanwhile, in case the webhook never comes (pollMs when no webhook is asked for).
   */
  slowPollMs: z.number().int().min(100).max(3_600_000).default(60_000),
  /** queue-video (fal): the JSON Web Key Set of the ed25519 keys fal signs its webhooks with. */
  jwksUrl: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .default('https://rest.alpha.fal.ai/.well-known/jwks.json'),
  /** replicate: its webhook signing secret (`whsec_…`, GET /v1/webhooks/default/secret); without it no webhook is asked for. */
  webhookSecret: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be a whsec_… secret')
    .optional(),
});
/** When an upstream of a model with alternatives is skipped: `failures` in a row cool it down for `cooldownMs`. */
const breakerSchema = z.object({
  failures: z.number().int().min(1).max(1_000).default(3),
  cooldownMs: z.number().int().min(100).max(86_400_000).default(30_000),
});
export type BreakerConfig = z.infer<typeof breakerSchema>;
const PROTOCOL_KINDS: Record<UpstreamConfig['protocol'], readonly string[]> = {
  openai: ['chat', 'image'],
  anthropic: ['chat'],
  'queue-video': ['video'],
  replicate: ['image', 'video', 'upscale'],
};
export const upstreamsSchema = z
  .object({ upstreams: z.array(upstreamSchema), breaker: breakerSchema.default({ failures: 3, cooldownMs: 30_000 }) })
  .superRefine(({ upstreams }, ctx) => {
    const kinds = new Map(listModels().map((m) => [m.id, m.kind]));
    const names = new Set<string>();
    upstreams.forEach((u, i) => {
      // The name keys the upstream's shared health and its cost report: one name, one upstream.
      if (names.has(u.name))
        ctx.addIssue({
          code: 'custom',
          path: ['upstreams', i, 'name'],
          message: `${u.name} is the name of an earlier upstream`,
        });
      names.add(u.name);
      for (const model of Object.keys(u.models)) {
        const kind = kinds.get(model);
        const path = ['upstreams', i, 'models', model];
        const allowed = PROTOCOL_KINDS[u.protocol];
        if (kind === undefined)
          ctx.addIssue({ code: 'custom', path, message: `is not a catalogue model id (see GET /api/v1/models)` });
        else if (!allowed.includes(kind))
          ctx.addIssue({
            code: 'custom',
            path,
            message: `is a ${kind} model; a ${u.protocol} upstream serves ${allowed.join(' and ')}`,
          });
      }
    });
  });
export type UpstreamsConfig = z.infer<typeof upstreamsSchema>;
export type UpstreamConfig = UpstreamsConfig['upstreams'][number];

/** Parses the upstreams' JSON (from UPSTREAMS_JSON, or the file UPSTREAMS_FILE names) once, at start-up. */
const upstreamsJson = (read: (v: string) => string) =>
  z.preprocess(unsetIfEmpty, z.string().min(1).optional()).transform((v, ctx) => {
    if (v === undefined) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(read(v));
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `is not readable JSON: ${(err as Error).message}` });
      return z.NEVER;
    }
    const result = upstreamsSchema.safeParse(parsed);
    if (!result.success) {
      for (const issue of result.error.issues)
        ctx.addIssue({ code: 'custom', message: `${issue.path.join('.')}: ${issue.message}` });
      return z.NEVER;
    }
    return result.data;
  });

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
  /** Provider runs one worker process takes at once. */
  PROVIDER_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(200),
  /** Per kind: past this a generation fails with `timeout` and its hold is released (DESIGN §5). */
  DEADLINE_IMAGE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(10 * 60_000),
  DEADLINE_CHAT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(10 * 60_000),
  DEADLINE_VIDEO_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(2 * 3_600_000),
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
  DEADLINE_UPSCALE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(2 * 3_600_000),
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

const S3_SETTINGS = [
  'S3_BUCKET',
  'S3_ENDPOINT',
  'S3_PUBLIC_ENDPOINT',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE',
] as const;

const validatedConfig = configSchema.superRefine((c, ctx) => {
  // Any S3 setting means the operator wants the bucket: a half-given one must not quietly fall back
  // to local files. Static keys are required because a presigned URL dies with the credentials
  // that signed it, and role credentials usually live shorter than the 24 h the URLs promise.
  // The verification link goes by email; nothing could be verified without it.
  if (c.SIGNUP === 'open' && !c.SMTP_URL)
    ctx.addIssue({
      code: 'custom',
      path: ['SMTP_URL'],
      message: 'is required when SIGNUP=open (the verification link is sent by email)',
    });
  if (c.UPSTREAMS_JSON && c.UPSTREAMS_FILE)
    ctx.addIssue({
      code: 'custom',
      path: ['UPSTREAMS_FILE'],
      message: 'give UPSTREAMS_JSON or UPSTREAMS_FILE, not both',
    });
  if (S3_SETTINGS.some((name) => c[name] !== undefined)) {
    for (const name of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
      if (!c[name])
        ctx.addIssue({ code: 'custom', path: [name], message: 'is required when any S3_* setting is given' });
    }
  }
  // In production, secrets must be given: a generated one would differ per instance and be lost
  // with its disk. The URL signing secret only signs local output URLs.
  if (c.NODE_ENV !== 'production') return;
  // Webhook secrets are sealed by the API and opened by the workers: one key for all of them.
  const required = c.S3_BUCKET
    ? (['ADMIN_TOKEN', 'WEBHOOK_SECRET_KEY'] as const)
    : (['ADMIN_TOKEN', 'URL_SIGNING_SECRET', 'WEBHOOK_SECRET_KEY'] as const);
  for (const name of required) {
    if (!c[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when NODE_ENV=production' });
  }
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = validatedConfig.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export interface S3Settings {
  bucket: string;
  region: string;
  endpoint?: string;
  publicEndpoint?: string;
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The S3 store's settings, or undefined when outputs stay in the local folder. */
export function s3Settings(c: Config): S3Settings | undefined {
  if (!c.S3_BUCKET || !c.S3_ACCESS_KEY_ID || !c.S3_SECRET_ACCESS_KEY) return undefined;
  return {
    bucket: c.S3_BUCKET,
    region: c.S3_REGION,
    ...(c.S3_ENDPOINT ? { endpoint: c.S3_ENDPOINT } : {}),
    ...(c.S3_PUBLIC_ENDPOINT ? { publicEndpoint: c.S3_PUBLIC_ENDPOINT } : {}),
    // Self-hosted stores rarely have wildcard DNS for bucket host names; AWS prefers them.
    forcePathStyle: c.S3_FORCE_PATH_STYLE ?? c.S3_ENDPOINT !== undefined,
    accessKeyId: c.S3_ACCESS_KEY_ID,
    secretAccessKey: c.S3_SECRET_ACCESS_KEY,
  };
}

/** The per-kind deadlines of a configuration, as the generation service takes them. */
export function deadlinesOf(c: Config): Record<'image' | 'video' | 'chat' | 'upscale', number> {
  return {
    image: c.DEADLINE_IMAGE_MS,
    chat: c.DEADLINE_CHAT_MS,
    video: c.DEADLINE_VIDEO_MS,
    upscale: c.DEADLINE_UPSCALE_MS,
  };
}

/** A batch's price per kind, as a percentage of the lines' synchronous prices. */
export function batchRatesOf(c: Config): Record<'image' | 'video' | 'chat' | 'upscale', number> {
  return {
    image: c.BATCH_PRICE_PERCENT_IMAGE,
    video: c.BATCH_PRICE_PERCENT_VIDEO,
    chat: c.BATCH_PRICE_PERCENT_CHAT,
    // Not a batch endpoint; listed so every kind has a rate.
    upscale: 100,
  };
}

/** How many lines of a batch, and of an account's batches, run at once. */
export function batchLimitsOf(c: Config): { perBatch: number; perAccount: number } {
  return {
    perBatch: c.BATCH_LINES_IN_FLIGHT,
    perAccount: Math.max(c.BATCH_LINES_IN_FLIGHT, c.BATCH_ACCOUNT_LINES_IN_FLIGHT),
  };
}

/** What POST /v1/files and POST /v1/batches take. */
export function batchFileLimitsOf(c: Config): { maxBytes: number; maxLines: number; maxLineBytes: number } {
  return { maxBytes: c.BATCH_FILE_MAX_BYTES, maxLines: c.BATCH_MAX_LINES, maxLineBytes: c.BATCH_LINE_MAX_BYTES };
}

/** The webhook deliveries' own task queue, so a slow receiver never takes a generation's worker slot. */
export function webhookTaskQueueOf(c: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_WEBHOOK_TASK_QUEUE'>): string {
  return c.TEMPORAL_WEBHOOK_TASK_QUEUE ?? `${c.TEMPORAL_TASK_QUEUE}-webhooks`;
}

/** Development mode: webhooks may be plain http to loopback, and deliveries reach private networks. */
/** Whether outbound requests made for key holders may reach loopback and private networks. */
export function allowsPrivateNetworks(c: Pick<Config, 'NODE_ENV' | 'ALLOW_PRIVATE_NETWORKS'>): boolean {
  return c.ALLOW_PRIVATE_NETWORKS ?? c.NODE_ENV === 'development';
}

/** What a start prints when key holders can reach this host's own network, naming the switch. */
export function privateNetworkWarning(c: Pick<Config, 'NODE_ENV' | 'ALLOW_PRIVATE_NETWORKS'>): string | undefined {
  if (!allowsPrivateNetworks(c)) return undefined;
  const why = c.ALLOW_PRIVATE_NETWORKS === true ? 'ALLOW_PRIVATE_NETWORKS=true' : `NODE_ENV=${c.NODE_ENV}`;
  return (
    `Warning (${why}): webhooks and input images may reach loopback and private addresses, so any API key ` +
    'holder can make this host send requests to services on its own network. On a shared host set ' +
    'ALLOW_PRIVATE_NETWORKS=false (what production does).'
  );
}

export function isDevelopment(c: Pick<Config, 'NODE_ENV'>): boolean {
  return c.NODE_ENV === 'development';
}

/** The configured upstreams (none: every model runs on the simulator). */
export function upstreamSettings(c: Config): UpstreamConfig[] {
  return (c.UPSTREAMS_JSON ?? c.UPSTREAMS_FILE)?.upstreams ?? [];
}

/** The origin upstreams send their webhooks to, when one is configured. */
export function callbackBaseUrl(c: Config): string | undefined {
  return c.UPSTREAM_CALLBACK_BASE_URL ?? c.PUBLIC_BASE_URL;
}

/** When an upstream is cooled down (core/providers/health.ts). */
export function breakerSettings(c: Config): BreakerConfig {
  return (c.UPSTREAMS_JSON ?? c.UPSTREAMS_FILE)?.breaker ?? { failures: 3, cooldownMs: 30_000 };
}

/** Alert emails when SMTP_URL is set; absent otherwise (alerts are webhooks and dashboard only). */
export function mailOptionsOf(c: Config): { smtpUrl: string; from: string } | undefined {
  return c.SMTP_URL ? { smtpUrl: c.SMTP_URL, from: c.MAIL_FROM } : undefined;
}

/** Self-service sign-up when SIGNUP=open; absent otherwise (no sign-up routes). */
export function signupOptionsOf(c: Config): { startingCredits: number; chatCap: number } | undefined {
  return c.SIGNUP === 'open' ? { startingCredits: c.SIGNUP_CREDITS, chatCap: c.FREE_CHAT_CAP } : undefined;
}

/** Stripe billing when both its secrets are set; absent otherwise (no billing routes). */
export function billingOptionsOf(c: Config) {
  if (!c.STRIPE_SECRET_KEY || !c.STRIPE_WEBHOOK_SECRET) return undefined;
  return {
    secretKey: c.STRIPE_SECRET_KEY,
    webhookSecret: c.STRIPE_WEBHOOK_SECRET,
    apiUrl: c.STRIPE_API_URL,
    minPurchaseCredits: c.BILLING_MIN_CREDITS,
    maxPurchaseCredits: Math.max(c.BILLING_MIN_CREDITS, c.BILLING_MAX_CREDITS),
  };
}

export interface TracingSettings {
  /** Where spans are posted (OTLP/HTTP). */
  tracesUrl: string;
  serviceName: string;
}

/**
 * Tracing's settings when OTEL_EXPORTER_OTLP_ENDPOINT is set, else undefined (off). The endpoint is
 * the collector's base URL, as OpenTelemetry's own variable means it: traces go to its /v1/traces.
 */
export function tracingOf(
  c: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_SERVICE_NAME'>,
  defaultServiceName: string,
): TracingSettings | undefined {
  if (!c.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return {
    tracesUrl: `${c.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`,
    serviceName: c.OTEL_SERVICE_NAME ?? defaultServiceName,
  };
}
