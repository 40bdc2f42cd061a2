import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorStatus } from './schemas';
import { errorResponses } from './schemas';
import { assertManagementScope } from '../../core/accounts/principal';
import { principalOf, requireApiKey } from './auth';
import type { AuthDeps } from './auth';

/**
 * Who calls a management API mounted by two doors (webhooks, customers, the audit log) and how: group A with
 * an API key under /api/v1, or the dashboard with a session under /dashboard/api. The routes, their
 * service and their shapes are the same; the base path, the authentication and its failures differ.
 */
export interface ManagementDoor {
  /** `/api/v1` or `/dashboard/api`. */
  base: string;
  /** Runs before every route (after the door's own authentication, where the door has one). */
  authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  security: Record<string, string[]>[];
  tags: string[];
  /** Prepended to every operationId (e.g. `dashboard` → dashboardListCustomers). */
  operationPrefix?: string;
  /** The failure statuses every route of this door can answer besides its own. */
  errors: readonly ErrorStatus[];
  /** And those only its changes can (a session's CSRF refusal). */
  changeErrors?: readonly ErrorStatus[];
}

/** The operationId, error answers of a read and of a change, as a door names them. */
export function doorWords(door: ManagementDoor) {
  const statuses = (own: ErrorStatus[], extra: readonly ErrorStatus[]) =>
    errorResponses(...[...new Set([...own, ...door.errors, ...extra])].sort((a, b) => a - b));
  return {
    operationId: (name: string) =>
      door.operationPrefix ? `${door.operationPrefix}${name[0]!.toUpperCase()}${name.slice(1)}` : name,
    errors: (...own: ErrorStatus[]) => statuses(own, []),
    changeErrors: (...own: ErrorStatus[]) => statuses(own, door.changeErrors ?? []),
  };
}

/** Group A's side of a management API: an API key holding `scope`, under /api/v1. */
export function keyedManagementDoor(deps: AuthDeps, scope: 'customers' | 'audit', tags: string[]): ManagementDoor {
  const key = requireApiKey(deps, 'authentication_error');
  return {
    base: '/api/v1',
    authenticate: async (request, reply) => {
      await key(request, reply);
      assertManagementScope(principalOf(request), scope);
    },
    security: [{ apiKey: [] }],
    tags,
    // 403: the key lacks the scope.
    errors: [401, 403, 429, 500, 503],
  };
}
