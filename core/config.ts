import type { z } from 'zod';
import { configSchema } from './config/env';
import type { BreakerConfig, UpstreamConfig } from './config/upstreams';

/**
 * The one place configuration is read. Entry points call `loadConfig(process.env)` once and pass
 * the typed result down; nothing else reads the environment. The variables are `configSchema`
 * (config/env.ts); what follows are the rules across them, and the settings each part of the
 * service takes from a configuration.
 */

const S3_SETTINGS = [
  'S3_BUCKET',
  'S3_ENDPOINT',
  'S3_PUBLIC_ENDPOINT',
  'S3_ACCESS_KEY_ID',
  'S3_SECRET_ACCESS_KEY',
  'S3_FORCE_PATH_STYLE',
] as const;

const validatedConfig = configSchema.superRefine((c, ctx) => {
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
  // Any S3 setting means the operator wants the bucket: a half-given one must not quietly fall back
  // to local files. Static keys are required because a presigned URL dies with the credentials
  // that signed it, and role credentials usually live shorter than the 24 h the URLs promise.
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
