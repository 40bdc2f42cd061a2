import type pg from 'pg';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf } from '../../core/accounts/principal';
import { changeRole, invite, inviteBody, memberView, removeMember, roleBody, team } from '../../service/accounts/team';
import type { TeamActor } from '../../service/accounts/team';
import { principalOf } from '../shared/auth';
import type { FastifyRequest } from 'fastify';
import { errorResponses } from '../shared/schemas';
import type { ErrorStatus } from '../shared/schemas';
import { security, tags } from './route-docs';

/** The team page's calls: the account's members and their roles; inviting, changing and removing them. */

const teamList = z.object({ data: z.array(memberView) }).meta({ id: 'Team' });
const invited = z
  .object({
    id: z.string(),
    email: z.string(),
    role: memberView.shape.role,
    setPasswordUrl: z.string().describe('Hand it to them: it sets their password once, then they log in'),
    expiresAt: z.string(),
  })
  .meta({ id: 'TeamInvited' });
const memberParams = z.object({ id: z.string().describe('A member’s user id (usr_…)') });

const byOf = (request: FastifyRequest): TeamActor => ({
  userId: request.session!.userId,
  actor: actorOf(principalOf(request)),
});

export const teamRoutes: FastifyPluginAsyncZod<{
  pool: pg.Pool;
  publicBaseUrl: string | undefined;
  errors: readonly ErrorStatus[];
}> = async (app, deps) => {
  const route = app.withTypeProvider<ZodTypeProvider>();
  const errors = (...own: ErrorStatus[]) => errorResponses(...own, ...deps.errors);
  const changeErrors = (...own: ErrorStatus[]) => errorResponses(...own, 403, ...deps.errors);

  route.get(
    '/dashboard/api/team',
    {
      schema: {
        operationId: 'dashboardTeam',
        tags,
        security,
        summary: 'The account’s members with their roles',
        response: { 200: teamList, ...errors() },
      },
    },
    async (request) => team(deps.pool, principalOf(request).accountId),
  );

  route.post(
    '/dashboard/api/team',
    {
      schema: {
        operationId: 'dashboardInvite',
        tags,
        security,
        summary: 'Invite a member with a role: answers a one-time link that sets their password (24 hours)',
        description:
          'Only an owner invites an owner. 409 member_exists for a member of this account, email_taken for another’s.',
        body: inviteBody,
        response: { 201: invited, ...changeErrors(400, 409) },
      },
    },
    async (request, reply) => {
      const m = await invite(deps.pool, principalOf(request).accountId, byOf(request), request.body);
      const base = deps.publicBaseUrl ?? `${request.protocol}://${request.host}`;
      reply.code(201);
      return {
        id: m.id,
        email: m.email,
        role: m.role,
        setPasswordUrl: `${base}/dashboard/set-password#token=${m.token}`,
        expiresAt: m.expiresAt.toISOString(),
      };
    },
  );

  route.patch(
    '/dashboard/api/team/:id',
    {
      schema: {
        operationId: 'dashboardChangeRole',
        tags,
        security,
        summary: 'Change a member’s role (from their next request)',
        description:
          'Only an owner changes an owner or makes one. 409 last_owner: the account would be left without an owner.',
        params: memberParams,
        body: roleBody,
        response: { 200: teamList, ...changeErrors(400, 404, 409) },
      },
    },
    async (request) =>
      changeRole(deps.pool, principalOf(request).accountId, byOf(request), request.params.id, request.body.role),
  );

  route.delete(
    '/dashboard/api/team/:id',
    {
      schema: {
        operationId: 'dashboardRemoveMember',
        tags,
        security,
        summary: 'Remove a member: their sessions end at once',
        description: 'Only an owner removes an owner. 409 last_owner: the account would be left without an owner.',
        params: memberParams,
        response: { 200: teamList, ...changeErrors(404, 409) },
      },
    },
    async (request) => removeMember(deps.pool, principalOf(request).accountId, byOf(request), request.params.id),
  );
};
