import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BatchRates } from '../../core/batches/pricing';
import type { GenerationService } from '../../service/generation/service';
import { modelListing } from '../../service/catalogue/model-list';
import { usageCsv, usageReport as reportUsage } from '../../service/usage/usage';
import type { WatchEvent } from '../../service/generation/watch';
import { parseAccountEventId, parseGenerationEventId } from '../../service/generation/event-ids';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { errorBody, inDoorWords } from '../shared/errors';
import { sendCsv, wantsCsv } from '../shared/csv';
import { ledgerAnswer, ledgerList, ledgerQuery } from '../shared/ledger';
import { openEventStream } from '../shared/sse';
import type { StandingMonitor } from '../shared/standing';
import { generateHeaders, generateOptionsOf, idempotencyOf, listQuery, spendCapOption } from '../shared/fields';
import { remixBody, groupAGenerateBody, groupARequestOf } from '../shared/generate-bodies';
import {
  balance,
  errorResponses,
  generation,
  generationKind,
  generationList,
  generationListOf,
  generationOf,
  idParams,
  modelEntry,
  quote,
  serverSentEvent,
  usageQuery,
  usageReport,
} from '../shared/schemas';

/** The service names request fields as the shared request type does; group A spells some in snake_case. */
const GROUP_A_PARAMS: Record<string, string> = {
  imageUrl: 'image_url',
  maxTokens: 'max_tokens',
  editImages: 'input_images',
  editMask: 'mask_url',
};

const security = [{ apiKey: [] }];
const tags = ['Group A'];

/** Group A: the unified API under /api/v1. */
export const groupARoutes: FastifyPluginAsyncZod<
  AuthDeps & { service: GenerationService; standing: StandingMonitor; batchRates: BatchRates }
> = async (app, deps) => {
  // Public: no key, no rate limit (it reads nothing of an account).
  app.get(
    '/api/v1/models',
    {
      schema: {
        operationId: 'listModels',
        tags,
        summary: 'Every model with its unit, prices (alone and in a batch), seconds range and defaults',
        security: [],
        querystring: z.object({ kind: generationKind.optional() }),
        response: { 200: z.object({ data: z.array(modelEntry) }), ...errorResponses(400) },
      },
    },
    async (request) => ({ data: modelListing(deps.batchRates, request.query.kind) }),
  );

  await app.register(async (keyed) => {
    keyed.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
    const route = keyed.withTypeProvider<ZodTypeProvider>();

    route.post(
      '/api/v1/generate',
      {
        schema: {
          operationId: 'generate',
          tags,
          summary: 'Generate an image, video, chat reply or upscale',
          description:
            'Needs the scope generate:<kind>. Images and chat replies finish within the call and answer 200 (unless `Prefer: respond-async`); ' +
            'videos and upscales answer 202 with `queued` or `running` and a Location to poll.',
          security,
          body: groupAGenerateBody,
          headers: generateHeaders,
          response: {
            200: generation.describe('Finished (succeeded or failed) within the call'),
            202: generation.describe('Accepted and in flight: poll the Location'),
            ...errorResponses(400, 401, 402, 403, 409, 413, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const options = {
          ...generateOptionsOf(request, 'group-a', 'POST /api/v1/generate', {
            deadlineSeconds: request.body.deadline_seconds,
            customer: request.body.customer,
          }),
          ...spendCapOption(request.body.max_credits, 'max_credits'),
        };
        const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () =>
          deps.service.submit(groupARequestOf(request.body), principalOf(request), options),
        );
        if (options.respondAsync) reply.header('Preference-Applied', 'respond-async');
        if (g.status === 'queued' || g.status === 'running') {
          reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
        }
        return generationOf(g);
      },
    );

    route.post(
      '/api/v1/quote',
      {
        schema: {
          operationId: 'quote',
          tags,
          summary: 'What a generate request would cost now, with nothing held',
          description:
            'The body of POST /api/v1/generate, priced by the same rules (scope, safety guard, model, clamping) without admitting it: nothing is held, run or recorded. An upscale’s image is not fetched.',
          security,
          body: groupAGenerateBody,
          response: { 200: quote, ...errorResponses(400, 401, 403, 429, 500, 503) },
        },
      },
      async (request) =>
        inDoorWords(GROUP_A_PARAMS, () =>
          deps.service.quote(groupARequestOf(request.body), principalOf(request), 'group-a'),
        ),
    );

    route.get(
      '/api/v1/balance',
      {
        schema: {
          operationId: 'getBalance',
          tags,
          summary: 'Balance, active holds, plan and free chat allowance',
          security,
          response: { 200: balance, ...errorResponses(401, 429, 500, 503) },
        },
      },
      async (request) => deps.service.balance(principalOf(request)),
    );

    route.get(
      '/api/v1/ledger',
      {
        schema: {
          operationId: 'listLedger',
          tags,
          summary:
            'Every movement of the account’s credits, newest first: top-ups, holds, charges, releases, refunds, adjustments',
          description:
            '`amount` is the change of the available balance (a hold takes, a release or top-up gives, a charge turns a hold into spending and is 0), so the amounts of all entries add up to the balance. ' +
            'CSV with `Accept: text/csv` or `format=csv` (up to 10000 rows a page; the next page’s cursor in the `x-next-cursor` header).',
          security,
          querystring: ledgerQuery,
          response: {
            200: {
              description: 'A page of entries (JSON), or the same as CSV',
              content: { 'application/json': { schema: ledgerList }, 'text/csv': { schema: z.string() } },
            },
            ...errorResponses(400, 401, 429, 500, 503),
          },
        },
      },
      async (request, reply) => ledgerAnswer(deps.pool, request, reply),
    );

    route.get(
      '/api/v1/usage',
      {
        schema: {
          operationId: 'getUsage',
          tags,
          summary: 'Credits charged, generations, failures and tokens per day, model, key, kind or customer',
          description:
            'Generations created in [from, to), whichever door made them (of one customer with `customer`). Credits charged count settled generations; a failed one charges nothing. ' +
            '`group_by=customer` is what a platform invoices its own users from; CSV with `Accept: text/csv` or `format=csv`.',
          security,
          querystring: usageQuery,
          response: {
            200: {
              description: 'The report (JSON), or its groups as CSV',
              content: { 'application/json': { schema: usageReport }, 'text/csv': { schema: z.string() } },
            },
            ...errorResponses(400, 401, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const report = await reportUsage(deps.pool, principalOf(request), request.query);
        return wantsCsv(request) ? sendCsv(reply, 'usage.csv', usageCsv(report)) : report;
      },
    );

    route.get(
      '/api/v1/generations',
      {
        schema: {
          operationId: 'listGenerations',
          tags,
          summary: 'The account’s generations, newest first, every group’s',
          security,
          querystring: listQuery,
          response: { 200: generationList, ...errorResponses(400, 401, 429, 500, 503) },
        },
      },
      async (request) => generationListOf(await deps.service.list(principalOf(request), request.query)),
    );

    route.get(
      '/api/v1/generations/:id',
      {
        schema: {
          operationId: 'getGeneration',
          tags,
          summary: 'One generation: poll its status, read its output URL once it has succeeded',
          security,
          params: idParams,
          response: { 200: generation, ...errorResponses(401, 404, 429, 500, 503) },
        },
      },
      async (request) => generationOf(await deps.service.get(principalOf(request), request.params.id)),
    );

    route.post(
      '/api/v1/generations/:id/remix',
      {
        schema: {
          operationId: 'remixGeneration',
          tags,
          summary:
            'A new video from a succeeded one with a new prompt; model, seconds, resolution and aspect as the source ran',
          description:
            'Needs the scope generate:video. Priced, held and charged like any video; answers 202 with the new generation (params.remixedFrom names the source) and a Location to poll. ' +
            '404: not a video of this account; 409 generation_not_succeeded: the video has not succeeded.',
          security,
          params: idParams,
          body: remixBody,
          headers: generateHeaders,
          response: {
            202: generation.describe('Accepted and in flight: poll the Location'),
            ...errorResponses(400, 401, 402, 403, 404, 409, 413, 429, 500, 503),
          },
        },
      },
      async (request, reply) => {
        const route = 'POST /api/v1/generations/{id}/remix';
        const { id } = request.params;
        // The source is part of what the key stands for: the same key on another video is a conflict.
        const options = {
          ...generateOptionsOf(request, 'group-a', route, { customer: request.body.customer }),
          idempotency: idempotencyOf(request, route, { id, ...request.body }),
          ...spendCapOption(request.body.max_credits, 'max_credits'),
        };
        const { generation: g } = await inDoorWords(GROUP_A_PARAMS, () =>
          deps.service.remix(principalOf(request), id, request.body.prompt, options),
        );
        if (g.status === 'queued' || g.status === 'running')
          reply.code(202).header('Location', `/api/v1/generations/${g.id}`);
        return generationOf(g);
      },
    );

    route.post(
      '/api/v1/generations/:id/cancel',
      {
        schema: {
          operationId: 'cancelGeneration',
          tags,
          summary: 'Cancel a queued or running generation: it fails with code cancelled and its hold is released',
          description:
            'Cancelling a cancelled generation answers it again; any other finished one is a 409 naming its state.',
          security,
          params: idParams,
          response: { 200: generation, ...errorResponses(401, 404, 409, 429, 500, 503) },
        },
      },
      async (request) => generationOf(await deps.service.cancel(principalOf(request), request.params.id)),
    );

    route.get(
      '/api/v1/generations/:id/events',
      {
        schema: {
          operationId: 'followGeneration',
          tags,
          summary: 'Follow one generation live (Server-Sent Events) until it ends',
          description:
            'Each status it enters is an event `status` (queued, running) whose data is the generation; while it runs, an event `progress` each time its recorded progress rises, and for a video an event `preview` once its first frame is stored (`thumbnailUrl` set); the final one is `done`, after which the stream closes. ' +
            'Event ids rise with every event and resume a stream: send the last one back as `Last-Event-ID` (EventSource does) and only what is newer is sent, never an event again. ' +
            'An id is `1` (queued), `2` (running), `3` (final), or while running `2.<pp><f>`: the progress in percent as two digits and 1 once the preview was sent (`2.400`, then `2.401`); any other `Last-Event-ID` is a 400. ' +
            'Progress is a state, not a log: a resumed stream sends the generation as it is now (its status, its progress, its preview) where that is newer than the id, not every step it missed. Comments keep an idle stream open.',
          security,
          params: idParams,
          headers: generationLastEventId,
          response: { 200: eventStream, ...errorResponses(400, 401, 404, 429, 500, 503) },
        },
      },
      async (request, reply) => {
        const controller = new AbortController();
        const events = await deps.service.watch.generation(principalOf(request), request.params.id, {
          after: markOf(request.headers['last-event-id'], parseGenerationEventId),
          signal: controller.signal,
        });
        stream(request, reply, events, controller, deps.standing);
      },
    );

    route.get(
      '/api/v1/events',
      {
        schema: {
          operationId: 'followGenerations',
          tags,
          summary: "Follow the account's generations live (Server-Sent Events), or only those listed",
          description:
            'An event `status` (or `done` for a final status) each time one of them changes, whichever door made it, `progress` as a running one moves on and `preview` when a running video has its first frame. ' +
            'A status event’s id is the number of the change (`41`): the account’s changes are numbered in the order they commit, so `Last-Event-ID` resumes with exactly the generations that changed since, each as it is now; the other events’ ids count on from the last change (`41-3`) and are not replayed on resume. ' +
            'An id this account never issued counts as none (the stream starts from now); one that is not an id of this stream is a 400. `ids` (comma-separated) limits the stream to those generations and first sends each as it is now.',
          security,
          querystring: z.object({
            ids: z
              .string()
              .max(4_000)
              .optional()
              .describe('Comma-separated generation ids; the whole account when absent'),
          }),
          headers: accountLastEventId,
          response: { 200: eventStream, ...errorResponses(400, 401, 429, 500, 503) },
        },
      },
      async (request, reply) => {
        const controller = new AbortController();
        const ids = request.query.ids
          ?.split(',')
          .map((id) => id.trim())
          .filter((id) => id !== '');
        const events = await deps.service.watch.account(principalOf(request), {
          ids,
          after: markOf(request.headers['last-event-id'], parseAccountEventId),
          signal: controller.signal,
        });
        stream(request, reply, events, controller, deps.standing);
      },
    );
  });
};

/** A `Last-Event-ID` of one of the stream's own ids (service/generation/event-ids.ts), or none; anything else is a 400. */
const lastEventIdOf = (parse: (id: string) => unknown, shape: string) =>
  z.looseObject({
    'last-event-id': z
      .string()
      .max(40, { error: `Last-Event-ID must be an id this stream sent (${shape})`, abort: true })
      .refine((id) => id === '' || parse(id) !== undefined, {
        error: `Last-Event-ID must be an id this stream sent (${shape})`,
      })
      .optional()
      .describe(`The id of the last event received, to resume after it: ${shape}`),
  });
const generationLastEventId = lastEventIdOf(
  parseGenerationEventId,
  '1, 2, 3, or 2.<progress><preview> such as 2.400 and 2.401',
);
const accountLastEventId = lastEventIdOf(parseAccountEventId, '<change> or <change>-<n>, such as 41 or 41-3');
/** The mark a valid `Last-Event-ID` names (the header was validated); none for an absent or empty one. */
const markOf = <M>(id: string | undefined, parse: (id: string) => M | undefined): M | undefined =>
  id ? parse(id) : undefined;
const eventStream = {
  description:
    'text/event-stream: `status`, `progress`, `preview` and `done` events, each the generation as GET /api/v1/generations/{id} answers it',
  content: { 'text/event-stream': { schema: serverSentEvent } },
};

/**
 * Sends a watch's events as group A's SSE: the generation record, `done` for a final status. The
 * key is confirmed before each event and checked while the stream waits (api/shared/standing.ts): a
 * revoked key's stream ends with an `error` event naming why, and nothing after it.
 */
function stream(
  request: FastifyRequest,
  reply: FastifyReply,
  events: AsyncIterable<WatchEvent>,
  controller: AbortController,
  standing: StandingMonitor,
): void {
  const sse = openEventStream(request, reply, {
    standing: standing.watch(request),
    lastWords: (reason) => ({ event: 'error', data: errorBody('authentication_error', 401, reason) }),
  });
  sse.signal.addEventListener('abort', () => controller.abort(), { once: true });
  void (async () => {
    try {
      for await (const e of events) {
        if (e.type === 'account') continue;
        const event = e.type === 'generation' ? (e.final ? 'done' : 'status') : e.type;
        if (!(await sse.deliver(event, generationOf(e.generation), e.id))) break;
      }
    } catch (err) {
      request.log.warn({ err }, 'live events: the stream stopped');
    } finally {
      sse.end();
    }
  })();
}
