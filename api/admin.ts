import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { createAccount, createAccountBody, createKey, createKeyBody, revokeKey, topUp, topUpBody } from '../core/admin-operations';
import { UnauthorizedError } from '../core/errors';
import { bearerToken } from './auth';
import { parseBody as parse } from './body';

export interface AdminDeps {
  pool: pg.Pool;
  adminToken: string;
  defaultChatCap: number;
}

/** The operator API (DESIGN §8), guarded by ADMIN_TOKEN. */
export async function adminRoutes(app: FastifyInstance, deps: AdminDeps): Promise<void> {
  const expected = createHash('sha256').update(deps.adminToken).digest();
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const token = bearerToken(request);
    const given = createHash('sha256').update(token ?? '').digest();
    if (!token || !timingSafeEqual(given, expected)) throw new UnauthorizedError('A valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>).');
  });

  app.post('/admin/v1/accounts', async (request, reply) => {
    reply.code(201);
    return createAccount(deps.pool, parse(createAccountBody, request.body), deps.defaultChatCap);
  });
  app.post<{ Params: { id: string } }>('/admin/v1/accounts/:id/keys', async (request, reply) => {
    const created = await createKey(deps.pool, request.params.id, parse(createKeyBody, request.body));
    reply.code(201);
    return created;
  });
  app.post<{ Params: { id: string } }>('/admin/v1/accounts/:id/credits', async (request) =>
    topUp(deps.pool, request.params.id, parse(topUpBody, request.body)),
  );
  app.delete<{ Params: { id: string } }>('/admin/v1/keys/:id', async (request) => revokeKey(deps.pool, request.params.id));
}
