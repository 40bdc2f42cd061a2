import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GenerationService } from '../../service/generation/service';
import { recordOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { assertSessionMay, principalOf, requireKeyOrSession } from '../shared/auth';
import type { SessionAuthDeps } from '../shared/auth';
import { generateHeaders, generateOptionsOf, spendCapOption } from '../shared/fields';
import { groupCCallbackOption, groupCGenerateBody, groupCRequestOf } from '../shared/generate-bodies';
import {
  credits,
  errorResponses,
  generationError,
  generationKind,
  generationStatus,
  idParams,
  liveFields,
  liveFieldsOf,
  tokenUsage,
} from '../shared/schemas';

/** The spec's generation record (group C, webhook payloads); chat replies also carry their text. */
const generationRecord = z
  .object({
    id: z.string().describe('gen_ followed by 26 characters; ids sort by creation'),
    kind: generationKind,
    model: z.string().describe('The model that ran (canonical id)'),
    status: generationStatus,
    outputUrl: z.string().describe('Signed URL valid 24 h, made fresh on every read; empty until succeeded'),
    creditsCharged: z.number().describe('0 while in flight and for a free chat reply; the final charge after success'),
    error: generationError.nullable(),
    text: z.string().optional().describe('Chat only: the reply'),
    customer: z.string().optional().describe('Only when one was named: your own id for the end user it was made for'),
    usage: tokenUsage.optional().describe('A succeeded chat only: its tokens as the model’s provider counted them'),
  })
  .meta({ id: 'GenerationRecord' });

/** Group C's record: the spec's fields (as `generationRecord`) and the live ones after them. */
const liveGenerationRecord = generationRecord.extend(liveFields).meta({ id: 'LiveGenerationRecord' });

const generationResponse = z.object({ generation: liveGenerationRecord });
const recordWithLiveFields = (g: GenerationView) => ({ ...recordOf(g), ...liveFieldsOf(g) });
/** Group C takes an API key or a dashboard session (spec, Authentication 4). */
const security: Record<string, string[]>[] = [{ apiKey: [] }, { session: [] }];

/** Group C: per-kind generate, polling and credits, without a version prefix. */
export const groupCRoutes: FastifyPluginAsyncZod<SessionAuthDeps & { service: GenerationService }> = async (
  app,
  deps,
) => {
  app.addHook('onRequest', requireKeyOrSession(deps));

  app.post(
    '/api/generate',
    {
      schema: {
        operationId: 'legacyGenerate',
        tags: ['Group C'],
        summary: 'Generate an image, video, chat reply or upscale',
        description:
          'Images and chat replies finish within the call (unless `Prefer: respond-async`); videos and upscales answer `queued` or `running` at once and are polled with GET /api/generate/{id}. Every run is priced before it starts and the quote is the charge.',
        security,
        body: groupCGenerateBody,
        headers: generateHeaders,
        response: { 200: generationResponse, ...errorResponses(400, 401, 402, 403, 409, 413, 429, 500, 503) },
      },
    },
    async (request, reply) => {
      // With a session, generating is the playground's: a member whose role lacks it only reads.
      assertSessionMay(request, 'playground');
      const options = {
        ...generateOptionsOf(request, 'group-c', 'POST /api/generate', {
          deadlineSeconds: request.body.deadlineSeconds,
          customer: request.body.customer,
        }),
        ...spendCapOption(request.body.maxCredits, 'maxCredits'),
        ...groupCCallbackOption(request.body),
      };
      const { generation } = await deps.service.submit(groupCRequestOf(request.body), principalOf(request), options);
      if (options.respondAsync) reply.header('Preference-Applied', 'respond-async');
      return { generation: recordWithLiveFields(generation) };
    },
  );

  app.get(
    '/api/generate/:id',
    {
      schema: {
        operationId: 'legacyGetGeneration',
        tags: ['Group C'],
        summary: 'Poll a generation',
        security,
        params: idParams,
        response: { 200: generationResponse, ...errorResponses(401, 404, 429, 500, 503) },
      },
    },
    async (request) => ({
      generation: recordWithLiveFields(await deps.service.get(principalOf(request), request.params.id)),
    }),
  );

  app.get(
    '/api/credits',
    {
      schema: {
        operationId: 'legacyGetCredits',
        tags: ['Group C'],
        summary: 'The credit balance and the free chat allowance',
        security,
        response: { 200: credits, ...errorResponses(401, 429, 500, 503) },
      },
    },
    async (request) => {
      const { balance, holdsActive, trial } = await deps.service.balance(principalOf(request));
      return { balance, holdsActive, trial };
    },
  );
};
