import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requireApiKey } from '../shared/auth';
import { groupBBatchRoutes } from './batches';
import { groupBFileRoutes } from './files';
import { groupBImageRoutes } from './images';
import { groupBVideoRoutes } from './videos';
import { groupBVideoDerivationRoutes } from './video-derivations';
import { groupBChatRoutes } from './chat';
import { groupBModelRoutes } from './models';
import { groupBResponseRoutes } from './responses';
import type { GroupBDeps } from './common';

/**
 * Group B: the OpenAI-compatible API under /v1 (DESIGN §6). The official `openai` SDK works with
 * its base URL and key changed: request and response shapes, Server-Sent Events, error bodies
 * (`type` the code name, `code` the HTTP status), `x-request-id`, `retry-after-ms` and
 * `x-should-retry`. Chat and the Responses API run in this process and streams as the provider sends (service/generation/kinds/streamed-chat.ts);
 * images and videos are ordinary generations, listed by groups A and C too; batches (files and
 * batches) run many of them as one job.
 */

export const groupBRoutes: FastifyPluginAsyncZod<GroupBDeps> = async (app, deps) => {
  app.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
  await app.register(groupBModelRoutes, deps);
  await app.register(groupBChatRoutes, deps);
  await app.register(groupBResponseRoutes, deps);
  await app.register(groupBImageRoutes, deps);
  await app.register(groupBVideoRoutes, deps);
  await app.register(groupBVideoDerivationRoutes, deps);
  // Files for batches take their own multipart limits (api/group-b/files.ts).
  await app.register(groupBFileRoutes, deps);
  await app.register(groupBBatchRoutes, deps);
};
