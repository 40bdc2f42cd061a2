import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CATALOGUE_CREATED, findOpenAiChatModel, OPENAI_CHAT_MODELS } from '../../core/catalogue/models';
import type { ChatModel } from '../../core/catalogue/models';
import { NotFoundError } from '../../core/errors';
import { ANTHROPIC_CLIENTS } from './client-protocol';
import { catalogueModelOf } from './body';
import { errorsAnthropic } from './errors';

/**
 * Anthropic's Models API (`GET /v1/models`, `GET /v1/models/{model_id}`) for Anthropic's clients:
 * Claude Code discovers the models it may pick with `GET /v1/models?limit=1000`. The path is group
 * B's too; a request with `anthropic-version` or `x-api-key` is answered here in Anthropic's shape,
 * any other by group B in OpenAI's (client-protocol.ts). The models are the ids this door
 * takes in `model`: every chat model billed per output token.
 */

/** Anthropic's model lines that the catalogue's Claude tiers are. */
const LINES = ['haiku', 'sonnet', 'opus', 'fable'] as const;

const anthropicModel = z
  .object({
    type: z.literal('model'),
    id: z.string(),
    display_name: z.string(),
    created_at: z.string().describe('RFC 3339: when the catalogue took its current shape'),
    capabilities: z.null(),
    deprecated_at: z.null(),
    lifecycle: z.literal('active'),
    line: z.enum(LINES).nullable().describe('The Claude tier the id runs as; null for other families'),
    max_input_tokens: z.null(),
    max_tokens: z.number().int().describe('The most output tokens a message may ask for'),
    retires_at: z.null(),
  })
  .meta({ id: 'AnthropicModel' });
type AnthropicModel = z.infer<typeof anthropicModel>;

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(20),
  after_id: z.string().optional(),
  before_id: z.string().optional(),
});

const CREATED_AT = new Date(CATALOGUE_CREATED * 1000).toISOString();
const lineOf = (catalogueId: string) => LINES.find((line) => catalogueId === `claude-${line}`) ?? null;

/** `claude-sonnet` → `Claude Sonnet`, `gpt-5.5` → `GPT 5.5`: the id's words, as a picker shows them. */
function displayNameOf(id: string): string {
  return id
    .split('-')
    .map((word) => (/^(gpt|glm)$/.test(word) ? word.toUpperCase() : word.charAt(0).toUpperCase() + word.slice(1)))
    .join(' ');
}

/**
 * A model id as Anthropic describes one. The input limit is in characters here (the service cuts a
 * conversation to it), not tokens, so it is not given; capabilities are not described.
 */
const modelOf = (id: string, catalogue: ChatModel): AnthropicModel => ({
  type: 'model',
  id,
  display_name: displayNameOf(catalogue.id),
  created_at: CREATED_AT,
  capabilities: null,
  deprecated_at: null,
  lifecycle: 'active',
  line: lineOf(catalogue.id),
  max_input_tokens: null,
  max_tokens: catalogue.maxOutputTokens,
  retires_at: null,
});

const MODELS: readonly AnthropicModel[] = OPENAI_CHAT_MODELS.map((m) => modelOf(m.id, m));

/** One page as Anthropic pages: up to `limit` after `after_id` or before `before_id`, in list order. */
export function modelPage(q: z.infer<typeof listQuery>) {
  const at = (id: string | undefined) => (id === undefined ? -1 : MODELS.findIndex((m) => m.id === id));
  const after = at(q.after_id);
  const before = at(q.before_id);
  const start = q.before_id !== undefined ? Math.max(0, before - q.limit) : after + 1;
  const end = q.before_id !== undefined ? Math.max(0, before) : start + q.limit;
  const data = MODELS.slice(start, end);
  return {
    data,
    has_more: q.before_id !== undefined ? start > 0 : end < MODELS.length,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
  };
}

export const anthropicModelRoutes: FastifyPluginAsyncZod = async (app) => {
  const route = app.withTypeProvider<ZodTypeProvider>();
  // Group B documents these paths; Anthropic's shapes are in docs/api/anthropic.md.
  route.get(
    '/v1/models',
    {
      constraints: ANTHROPIC_CLIENTS,
      schema: {
        hide: true,
        querystring: listQuery,
        response: {
          200: z.object({
            data: z.array(anthropicModel),
            has_more: z.boolean(),
            first_id: z.string().nullable(),
            last_id: z.string().nullable(),
          }),
          ...errorsAnthropic(400, 401, 429, 500, 503),
        },
      },
    },
    async (request) => modelPage(request.query),
  );

  route.get(
    '/v1/models/:model',
    {
      constraints: ANTHROPIC_CLIENTS,
      schema: {
        hide: true,
        params: z.object({ model: z.string() }),
        response: { 200: anthropicModel, ...errorsAnthropic(400, 401, 404, 429, 500, 503) },
      },
    },
    async (request) => {
      const id = request.params.model;
      const catalogue = findOpenAiChatModel(catalogueModelOf(id));
      if (!catalogue) throw new NotFoundError(`model: ${id}`, { param: 'model' });
      return modelOf(id, catalogue);
    },
  );
};
