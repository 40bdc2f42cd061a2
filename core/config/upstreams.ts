import { z } from 'zod';
import { listModels } from '../catalogue/models';
import { unsetIfEmpty } from './fields';

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
    /**
     * queue-video: the upstream's names (paths) for continuing and for editing a video of this
     * model, where it has them (fal: `…/extend-video`, `…/video-to-video`); without one, an
     * extension or edit of the model is refused before anything is held.
     */
    extend: z.string().min(1).optional(),
    edit: z.string().min(1).optional(),
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
      for (const [model, entry] of Object.entries(u.models)) {
        const kind = kinds.get(model);
        const path = ['upstreams', i, 'models', model];
        const allowed = PROTOCOL_KINDS[u.protocol];
        // Only a video queue extends or edits videos; elsewhere the paths would be silently unused.
        if (typeof entry === 'object' && (entry.extend || entry.edit) && u.protocol !== 'queue-video')
          ctx.addIssue({ code: 'custom', path, message: `extend and edit are paths of a queue-video upstream` });
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
export const upstreamsJson = (read: (v: string) => string) =>
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
