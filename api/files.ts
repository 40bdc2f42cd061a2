import { createReadStream } from 'node:fs';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { OutputStore } from '../core/storage/output-store';
import { errorBody } from './shared/errors';
import { apiError } from './shared/schemas';

/** Output files, reached only through a signed URL; the signature is the authorisation. */
export const fileRoutes: FastifyPluginAsyncZod<{ store: OutputStore }> = async (app, deps) => {
  // Files share the dashboard's origin and its session cookie: a generated file (an SVG, an HTML
  // reply saved as text) must never be sniffed into, or run as, a page of ours. `sandbox` gives a
  // document a unique opaque origin with scripts off; errors get the same headers.
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('X-Content-Type-Options', 'nosniff').header('Content-Security-Policy', 'sandbox');
  });
  app.get(
    '/files/*',
    {
      schema: {
        operationId: 'getFile',
        tags: ['Files'],
        summary: 'A generated file (the outputUrl of a generation); valid 24 h from when the URL was made',
        description: 'The signature in the URL is the authorisation: no key is needed.',
        security: [],
        params: z.object({ '*': z.string().describe('The file key, e.g. gen_…/output.png') }),
        querystring: z.object({ expires: z.string().optional(), signature: z.string().optional() }),
        response: {
          200: {
            description: 'The file, with its content type',
            content: { '*/*': { schema: z.string().describe('binary') } },
          },
          404: apiError.describe('The file does not exist or its link is invalid or expired'),
        },
      },
    },
    async (request, reply) => {
      const { expires = '', signature = '' } = request.query;
      const file = await deps.store.open(request.params['*'], expires, signature);
      if (!file)
        return reply.code(404).send(errorBody('not_found', 404, 'The file does not exist or its link has expired.'));
      // A stream is not what the documented schema types; the raw reply sends it.
      const raw: FastifyReply = reply;
      return raw
        .header('Content-Type', file.contentType)
        .header('Content-Length', String(file.size))
        .header('Cache-Control', 'private, max-age=3600')
        .send(createReadStream(file.path));
    },
  );
};
