import { createReadStream } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { OutputStore } from '../core/storage';
import { errorBody } from './errors';

/** Output files, reached only through a signed URL; the signature is the authorisation. */
export async function fileRoutes(app: FastifyInstance, deps: { store: OutputStore }): Promise<void> {
  app.get<{ Params: { '*': string }; Querystring: { expires?: string; signature?: string } }>('/files/*', async (request, reply) => {
    const { expires = '', signature = '' } = request.query;
    const file = await deps.store.open(request.params['*'], expires, signature);
    if (!file) return reply.code(404).send(errorBody('not_found', 404, 'The file does not exist or its link has expired.'));
    return reply
      .header('Content-Type', file.contentType)
      .header('Content-Length', String(file.size))
      .header('Cache-Control', 'private, max-age=3600')
      .send(createReadStream(file.path));
  });
}
