import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireApiKey } from '../shared/auth';
import { openaiBatchRoutes } from './batches';
import { openaiFileRoutes } from './files';
import { openaiImageRoutes } from './images';
import { openaiVideoRoutes } from './videos';
import { openaiChatRoutes } from './chat';
import { openaiModelRoutes } from './models';
import { openaiResponseRoutes } from './responses';
import type { OpenAiDeps } from './common';

/**
 * Group B: the OpenAI-compatible API under /v1 (DESIGN §6). The official `openai` SDK works with
 * its base URL and key changed: request and response shapes, Server-Sent Events, error bodies
 * (`type` the code name, `code` the HTTP status), `x-request-id`, `retry-after-ms` and
 * `x-should-retry`. Chat and the Responses API run in this process and streams as the provider sends (service/chat/runs.ts);
 * images and videos are ordinary generations, listed by groups A and C too; batches (files and
 * batches) run many of them as one job.
 */

export const openaiRoutes: FastifyPluginAsyncZod<OpenAiDeps> = async (app, deps) => {
  app.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
  await app.register(openaiModelRoutes, deps);
  await app.register(openaiChatRoutes, deps);
  await app.register(openaiResponseRoutes, deps);
  await app.register(openaiImageRoutes, deps);
  await app.register(openaiVideoRoutes, deps);
  // Files for batches take their own multipart limits (api/group-b/files.ts).
  await app.register(openaiFileRoutes, deps);
  await app.register(openaiBatchRoutes, deps);
};
