import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { auditLog, auditPage, auditQuery } from '../../service/accounts/audit';
import { AUDIT_ACTIONS } from '../../core/db/audit';
import { principalOf } from '../shared/auth';
import { doorWords } from '../shared/door';
import type { ManagementDoor } from '../shared/door';

/** The account's audit log: group A with a key holding the `audit` scope, and the dashboard (owners and admins). */
export const auditRoutes: FastifyPluginAsyncZod<{ door: ManagementDoor; pool: pg.Pool }> = async (
  app,
  { door, pool },
) => {
  app.addHook('onRequest', door.authenticate);
  const { operationId, errors } = doorWords(door);
  app.withTypeProvider<ZodTypeProvider>().get(
    `${door.base}/audit-log`,
    {
      schema: {
        operationId: operationId('listAuditLog'),
        tags: door.tags,
        security: door.security,
        summary:
          'Every change of a member, role, key, budget, webhook endpoint, threshold or customer limit, newest first',
        description: `Who (a dashboard user, an API key or the operator), what (${AUDIT_ACTIONS.join(', ')}), on what, when and from which address.`,
        querystring: auditQuery,
        // 403: a key without the audit scope, a member whose role may not read it.
        response: { 200: auditPage, ...errors(400, 403) },
      },
    },
    async (request) => auditLog(pool, principalOf(request).accountId, request.query),
  );
};
