import type { FastifyInstance } from 'fastify';
import { composeApi } from '../../runtime/api-app';
import type { ApiInputs } from '../../runtime/api-app';
import { ADMIN_TOKEN } from './harness';
import type { Harness } from './harness';

/**
 * A second API on the harness's database, Temporal and files, built as production builds it: no
 * development-mode webhooks, no input fetcher that reaches loopback, no upstream of the harness's,
 * no free chats. A test takes it where the harness's own app is not what it needs (a database or a
 * Temporal that fails, production's URL rules, other settings) and passes only what differs. The
 * caller closes it.
 */
export function productionApi(h: Harness, inputs: Partial<ApiInputs> = {}): Promise<FastifyInstance> {
  return composeApi({
    pool: h.pool,
    client: h.client,
    taskQueue: h.taskQueue,
    store: h.store,
    adminToken: ADMIN_TOKEN,
    syncWaitMs: 1_000,
    defaultChatCap: 0,
    ...inputs,
  });
}
