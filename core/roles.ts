/**
 * What each role of an account's dashboard users may do. A role is a set of permissions; every
 * dashboard route names the one permission it needs (api/dashboard/permissions.ts), so this table
 * and that one are the whole of who may do what. Imports nothing.
 *
 * - owner: everything, the team included (only an owner makes or touches another owner).
 * - admin: everything but owners: manages the team's other members, reads the audit log.
 * - developer: API keys and their budgets, webhook endpoints, the playground.
 * - billing: buying credits, the low-balance alert, customers' budgets and rate limits.
 * - viewer: reads what every member reads, changes nothing.
 */
export const ROLES = ['owner', 'admin', 'developer', 'billing', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = ['read', 'keys', 'webhooks', 'playground', 'billing', 'customers', 'team', 'audit'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  developer: ['read', 'keys', 'webhooks', 'playground'],
  billing: ['read', 'billing', 'customers'],
  viewer: ['read'],
};

export const mayDo = (role: Role, permission: Permission): boolean => ROLE_PERMISSIONS[role].includes(permission);

/** Only an owner makes an owner, or changes or removes one. */
export const mayManage = (actor: Role, target: Role, to?: Role): boolean =>
  mayDo(actor, 'team') && (actor === 'owner' || (target !== 'owner' && to !== 'owner'));
