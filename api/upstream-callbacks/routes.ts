import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CallbackProtocol, UpstreamCallbackService } from '../../service/upstream-callbacks/callbacks';
import { errorResponses } from '../shared/schemas';

const tags = ['Upstreams'];

const DESCRIPTIONS: Record<CallbackProtocol, { summary: string; description: string }> = {
  fal: {
    summary: 'fal’s webhook endpoint (fal_webhook): a queued video ended',
    description:
      'Verified before parsing: ed25519 over X-Fal-Webhook-Request-Id, -User-Id, -Timestamp and the SHA-256 of the body, with the keys of the upstream’s JWKS (jwksUrl), the timestamp within 5 minutes. A request id seen before changes nothing. Completes the generation’s wait; the worker then collects the output.',
  },
  replicate: {
    summary: 'Replicate’s webhook endpoint: a prediction ended',
    description:
      'Verified before parsing with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature; the upstream’s webhookSecret), the timestamp within 5 minutes. A webhook id seen before changes nothing; events other than a final prediction are acknowledged.',
  },
};

/**
 * The door upstreams knock on when a job we left waiting ends: no API key, the
 * signature is the authentication, so the body is kept unparsed for it. `?upstream=` names the
 * configured upstream whose keys must verify it (the URL we gave it when submitting).
 */
export const upstreamCallbackRoutes: FastifyPluginAsyncZod<{ callbacks: UpstreamCallbackService }> = async (
  app,
  deps,
) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, body, done) =>
    done(null, body),
  );
  for (const protocol of ['fal', 'replicate'] as const) {
    app.withTypeProvider<ZodTypeProvider>().post(
      `/providers/${protocol}/webhook`,
      {
        schema: {
          operationId: `${protocol}Webhook`,
          tags,
          security: [],
          ...DESCRIPTIONS[protocol],
          querystring: z.object({
            upstream: z.string().min(1).max(50).describe('The configured upstream that was given this URL'),
          }),
          response: {
            200: z
              .object({
                received: z.literal(true),
                outcome: z
                  .enum(['completed', 'ended', 'already', 'replayed', 'unknown', 'ignored'])
                  .describe(
                    'completed: the waiting run was woken; ended: recorded, the next look finds it; already: it had ended; replayed: seen before; unknown: no job of ours; ignored: not a final event',
                  ),
              })
              .meta({ id: `${protocol === 'fal' ? 'Fal' : 'Replicate'}WebhookReceipt` }),
            ...errorResponses(400, 500, 503),
          },
        },
      },
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return {
          received: true as const,
          outcome: await deps.callbacks.receive(protocol, request.query.upstream, request.headers, raw),
        };
      },
    );
  }
};
