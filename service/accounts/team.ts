import type pg from 'pg';
import { z } from 'zod';
import { insertAuditEvent } from '../../core/db/audit';
import {
  deleteMember,
  findUserByEmail,
  insertPasswordLink,
  insertUser,
  listMembers,
  lockMembers,
  setMemberRole,
} from '../../core/db/users';
import type { MemberRow } from '../../core/db/users';
import { inTransaction } from '../../core/db/pool';
import type { Queryable } from '../../core/db/pool';
import { EmailTakenError, LastOwnerError, MemberExistsError, NotFoundError, PermissionError } from '../../core/errors';
import { newId, USER_ID_PATTERN } from '../../core/ids';
import { hashToken, newToken } from '../../core/accounts/passwords';
import { mayManage, ROLES } from '../../core/roles';
import type { Role } from '../../core/roles';
import type { Actor } from './audit';
import { emailAddress, PASSWORD_LINK_TTL_MS } from './operations';

/**
 * An account's team: its dashboard users and their roles (core/roles.ts). Every change locks the
 * account's members first, so concurrent changes take turns: an account never loses its last
 * owner, and a member's own role is the one it has when the change is made.
 */

/** A member making a change: who they are as the audit log says, and their session's user. */
export interface TeamActor {
  userId: string;
  actor: Actor;
}

export const memberView = z
  .object({
    id: z.string(),
    email: z.string(),
    role: z.enum(ROLES),
    active: z.boolean().describe('False until the invitation was followed and a password set'),
    createdAt: z.string(),
  })
  .meta({ id: 'TeamMember' });

export const inviteBody = z
  .strictObject({
    email: emailAddress.transform((e) => e.toLowerCase()),
    role: z.enum(ROLES).describe('What they may do; only an owner invites an owner'),
  })
  .meta({ id: 'TeamInvite', examples: [{ email: 'ada@example.com', role: 'developer' }] });

export const roleBody = z
  .strictObject({ role: z.enum(ROLES) })
  .meta({ id: 'TeamRoleChange', examples: [{ role: 'billing' }] });

const viewOf = (m: MemberRow): z.infer<typeof memberView> => ({
  id: m.id,
  email: m.email,
  role: m.role,
  active: m.active,
  createdAt: m.createdAt.toISOString(),
});

export async function team(pool: pg.Pool, accountId: string) {
  return { data: (await listMembers(pool, accountId)).map(viewOf) };
}

/** The members locked, the acting member's role as it is now, and the target (404 when not of this account). */
async function lockedTarget(tx: Queryable, accountId: string, by: TeamActor, userId: string) {
  const members = await lockMembers(tx, accountId);
  const me = members.find((m) => m.id === by.userId);
  if (!me) throw new PermissionError('You are no longer a member of this account.');
  const target = USER_ID_PATTERN.test(userId) ? members.find((m) => m.id === userId) : undefined;
  if (!target) throw new NotFoundError(`Member '${userId}' not found.`, { param: 'id' });
  const owners = members.filter((m) => m.role === 'owner').length;
  return { me, target, owners };
}

const refuse = (me: Role, what: string) =>
  new PermissionError(`Your role (${me}) may not ${what}: only an owner makes, changes or removes an owner.`);

/** Invites a member with a role: a one-time link that sets their password, valid 24 hours. */
export async function invite(
  pool: pg.Pool,
  accountId: string,
  by: TeamActor,
  body: z.infer<typeof inviteBody>,
  now = Date.now(),
) {
  const token = newToken();
  return inTransaction(pool, async (tx) => {
    const members = await lockMembers(tx, accountId);
    const me = members.find((m) => m.id === by.userId);
    if (!me) throw new PermissionError('You are no longer a member of this account.');
    if (!mayManage(me.role, body.role, body.role)) throw refuse(me.role, `invite an ${body.role}`);
    const existing = await findUserByEmail(tx, body.email);
    if (existing) throw existing.accountId === accountId ? new MemberExistsError(body.email) : new EmailTakenError();
    const id = newId('usr');
    if (!(await insertUser(tx, { id, accountId, email: body.email, role: body.role }))) throw new EmailTakenError();
    const expiresAt = new Date(now + PASSWORD_LINK_TTL_MS);
    await insertPasswordLink(tx, { tokenHash: hashToken(token), userId: id, expiresAt });
    await insertAuditEvent(tx, {
      accountId,
      actor: by.actor,
      action: 'member.invited',
      target: id,
      details: { email: body.email, role: body.role },
    });
    return { id, email: body.email, role: body.role, token, expiresAt };
  });
}

export async function changeRole(pool: pg.Pool, accountId: string, by: TeamActor, userId: string, role: Role) {
  await inTransaction(pool, async (tx) => {
    const { me, target, owners } = await lockedTarget(tx, accountId, by, userId);
    if (!mayManage(me.role, target.role, role)) throw refuse(me.role, `make ${target.email} ${role}`);
    if (target.role === role) return;
    if (target.role === 'owner' && owners === 1) throw new LastOwnerError();
    await setMemberRole(tx, accountId, userId, role);
    await insertAuditEvent(tx, {
      accountId,
      actor: by.actor,
      action: 'member.role_changed',
      target: userId,
      details: { email: target.email, from: target.role, to: role },
    });
  });
  return team(pool, accountId);
}

export async function removeMember(pool: pg.Pool, accountId: string, by: TeamActor, userId: string) {
  await inTransaction(pool, async (tx) => {
    const { me, target, owners } = await lockedTarget(tx, accountId, by, userId);
    if (!mayManage(me.role, target.role)) throw refuse(me.role, `remove ${target.email}`);
    if (target.role === 'owner' && owners === 1) throw new LastOwnerError();
    await deleteMember(tx, accountId, userId);
    await insertAuditEvent(tx, {
      accountId,
      actor: by.actor,
      action: 'member.removed',
      target: userId,
      details: { email: target.email, role: target.role },
    });
  });
  return team(pool, accountId);
}
