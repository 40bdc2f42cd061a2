import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CATALOGUE_CREATED, findOpenAiChatModel, listModels } from '../../core/catalogue/models';
import type { Model } from '../../core/catalogue/models';
import { DomainError } from '../../core/errors';
import { modelListing } from '../../service/catalogue/model-list';
import { errorsB, security, tags } from './common';
import type { GroupBDeps } from './common';

/** Group B's model list: every id it accepts, with the price of the catalogue model it runs as. */

const openaiModel = z
  .object({
    id: z.string(),
    object: z.literal('model'),
    created: z.number().int(),
    owned_by: z.string(),
    kind: z.enum(['image', 'video', 'chat']).describe('What it generates'),
    unit: z.enum(['image', 'second', 'reply', '1k_output_tokens']).describe('What one price unit buys'),
    price: z.number().nullable().describe('Credits per unit, when the price has one value'),
    prices: z.record(z.string(), z.number().nullable()).nullable().describe('Video: credits per second by resolution'),
    priced_as: z.string().describe('The catalogue model whose price applies (GET /api/v1/models)'),
  })
  .meta({ id: 'OpenAiModel' });

/** Group B's model list shows prices alone: the rates do not change them. */
const DEFAULT_RATES = { image: 100, video: 100, chat: 100, upscale: 100 };

/** The ids group B accepts, each with the price of the model it runs as. */
function groupBModels(): z.infer<typeof openaiModel>[] {
  const listing = new Map(modelListing(DEFAULT_RATES).map((m) => [m.id, m]));
  const entry = (id: string, m: Model) => {
    const l = listing.get(m.id)!;
    return {
      id,
      object: 'model' as const,
      created: CATALOGUE_CREATED,
      owned_by: 'gensvc',
      kind: m.kind as 'image' | 'video' | 'chat',
      unit: l.unit,
      price: l.price,
      prices: l.prices,
      priced_as: m.id,
    };
  };
  const out: z.infer<typeof openaiModel>[] = [];
  for (const m of listModels()) {
    if (m.kind === 'image') for (const id of [m.id, ...m.aliases]) out.push(entry(id, m));
    if (m.kind === 'video') for (const id of [m.id, ...m.openaiIds]) out.push(entry(id, m));
    if (m.kind === 'chat' && m.unit === '1k_output_tokens') out.push(entry(m.id, m));
  }
  out.push(entry('auto', findOpenAiChatModel('auto')!));
  return out;
}

export const groupBModelRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/v1/models',
    {
      schema: {
        operationId: 'openaiListModels',
        tags,
        security,
        summary: 'The model ids group B accepts, with their prices',
        response: {
          200: z.object({ object: z.literal('list'), data: z.array(openaiModel) }),
          ...errorsB(401, 429, 500, 503),
        },
      },
    },
    async () => ({ object: 'list' as const, data: groupBModels() }),
  );

  route.get(
    '/v1/models/:model',
    {
      schema: {
        operationId: 'openaiGetModel',
        tags,
        security,
        summary: 'One model id of group B',
        params: z.object({ model: z.string() }),
        response: { 200: openaiModel, ...errorsB(401, 404, 429, 500, 503) },
      },
    },
    async (request) => {
      const found = groupBModels().find((m) => m.id === request.params.model);
      if (!found) throw new NotFoundModel(request.params.model);
      return found;
    },
  );
};

class NotFoundModel extends DomainError {
  readonly status = 404;
  readonly type = 'not_found';
  constructor(id: string) {
    super(`The model '${id}' does not exist in group B; see GET /v1/models.`, { param: 'model' });
  }
}
