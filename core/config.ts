import { z } from 'zod';

/**
 * The one place configuration is read. Entry points call `loadConfig(process.env)` once and pass
 * the typed result down; nothing else reads the environment.
 */
const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const optionalUrl = z.preprocess(unsetIfEmpty, z.string().url().optional());
const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  ADMIN_TOKEN: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(16, 'must be at least 16 characters').optional()),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_URL: optionalUrl,
  TEMPORAL_ADDRESS: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[^:\s]+:\d+$/, 'must be host:port').optional()),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('generations'),
  TEMPORAL_UI_PORT: port(8233),
  TEMPORAL_PORT: port(7233),
  EMBEDDED_PG_PORT: port(5433),
  PUBLIC_BASE_URL: optionalUrl,
  /** Signs output URLs; generated and kept in DATA_DIR when not given. */
  URL_SIGNING_SECRET: z.preprocess((v) => (v === '' ? undefined : v), z.string().min(16).optional()),
  /** How long the API waits for an image or chat to finish before answering with its current state. */
  SYNC_WAIT_MS: z.coerce.number().int().min(0).max(300_000).default(60_000),
  /** How long the API waits for a hold to be placed or refused before answering 503 (and cancelling). */
  ADMISSION_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  SIM_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).optional(),
  FREE_CHAT_CAP: z.coerce.number().int().min(0).default(20),
  VIDEO_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(5),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Rate-limit windows shared by every API instance; without it each instance counts on its own. */
  REDIS_URL: z.preprocess(unsetIfEmpty, z.string().regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL').optional()),
});

/** In production, secrets must be given: a generated one would differ per instance and be lost with its disk. */
const validatedConfig = configSchema.superRefine((c, ctx) => {
  if (c.NODE_ENV !== 'production') return;
  for (const name of ['ADMIN_TOKEN', 'URL_SIGNING_SECRET'] as const) {
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
