import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { GenerationService } from '../../service/generation/service';
import type { WatchEvent } from '../../service/generation/watch';
import { parseAccountEventId, parseGenerationEventId } from '../../service/generation/event-ids';
import { principalOf } from '../shared/auth';
import { errorBody } from '../shared/errors';
import { openEventStream } from '../shared/sse';
import type { StandingMonitor } from '../shared/standing';
import { errorResponses, generationOf, idParams, serverSentEvent } from '../shared/schemas';
import { security, tags } from './route-docs';

/** Following generations live (mounted inside the key's scope): one until it ends, or the account's. */
export const liveEventRoutes: FastifyPluginAsyncZod<{ service: GenerationService; standing: StandingMonitor }> = async (
  app,
  deps,
) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

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
