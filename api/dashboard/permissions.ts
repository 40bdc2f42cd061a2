import type { FastifyRequest } from 'fastify';
import { PermissionError } from '../../core/errors';
import { assertSessionMay } from '../shared/auth';
import type { Permission } from '../../core/roles';

/**
 * The permission every route of the dashboard's API needs (core/roles.ts says which roles have
 * it). A route missing here is refused to everyone: a new route is closed until it is listed, and
 * a test holds this table to the routes the app has and to the table in docs/api/dashboard.md.
 */
export const DASHBOARD_ROUTE_PERMISSIONS: Readonly<Record<string, Permission>> = {
  'POST /dashboard/api/logout': 'read',
  'GET /dashboard/api/session': 'read',
  'GET /dashboard/api/vocabulary': 'read',
  'GET /dashboard/api/overview': 'read',
  'GET /dashboard/api/events': 'read',
  'GET /dashboard/api/alerts': 'read',
  'PUT /dashboard/api/low-balance': 'billing',
  'GET /dashboard/api/billing': 'read',
  'POST /dashboard/api/billing/checkout': 'billing',
  'GET /dashboard/api/ledger': 'billing',
  'GET /dashboard/api/usage': 'read',
  'GET /dashboard/api/generations': 'read',
  'POST /dashboard/api/generations/:id/cancel': 'playground',
  'POST /dashboard/api/quote': 'playground',
  'GET /dashboard/api/batches': 'read',
  'GET /dashboard/api/batches/:id/events': 'read',
  'POST /dashboard/api/batches/:id/cancel': 'playground',
  'GET /dashboard/api/batches/:id/output': 'read',
  'GET /dashboard/api/batches/:id/errors': 'read',
  'GET /dashboard/api/keys': 'read',
  'POST /dashboard/api/keys': 'keys',
  'PUT /dashboard/api/keys/:id/budget': 'keys',
  'DELETE /dashboard/api/keys/:id/budget': 'keys',
  'DELETE /dashboard/api/keys/:id': 'keys',
  'GET /dashboard/api/webhooks': 'read',
  'POST /dashboard/api/webhooks': 'webhooks',
  'GET /dashboard/api/webhooks/:id': 'read',
  'PATCH /dashboard/api/webhooks/:id': 'webhooks',
  'DELETE /dashboard/api/webhooks/:id': 'webhooks',
  'POST /dashboard/api/webhooks/:id/rotate-secret': 'webhooks',
  'GET /dashboard/api/webhooks/:id/deliveries': 'read',
  'POST /dashboard/api/webhooks/:id/deliveries/:deliveryId/redeliver': 'webhooks',
  'POST /dashboard/api/webhooks/:id/test': 'webhooks',
  'GET /dashboard/api/webhooks/callback-secret': 'read',
  'POST /dashboard/api/webhooks/callback-secret/rotate': 'webhooks',
  'GET /dashboard/api/webhooks/callbacks/deliveries': 'read',
  'POST /dashboard/api/webhooks/callbacks/deliveries/:deliveryId/redeliver': 'webhooks',
  'GET /dashboard/api/customer-defaults': 'read',
  'PUT /dashboard/api/customer-defaults': 'customers',
  'GET /dashboard/api/customers': 'read',
  'GET /dashboard/api/customers/:customer': 'read',
  'PUT /dashboard/api/customers/:customer/limits': 'customers',
  'DELETE /dashboard/api/customers/:customer/limits': 'customers',
  'GET /dashboard/api/team': 'read',
  'POST /dashboard/api/team': 'team',
  'PATCH /dashboard/api/team/:id': 'team',
  'DELETE /dashboard/api/team/:id': 'team',
  'GET /dashboard/api/audit-log': 'audit',
};

/** The route's permission, by its method and pattern (HEAD as GET). */
export function permissionOf(method: string, url: string | undefined): Permission | undefined {
  return DASHBOARD_ROUTE_PERMISSIONS[`${method === 'HEAD' ? 'GET' : method} ${url ?? ''}`];
}

/** Refuses (403 permission_error) a session whose role lacks the route's permission, or a route not listed. */
export function assertRoleMay(request: FastifyRequest): void {
  const needed = permissionOf(request.method, request.routeOptions.url);
  if (!needed) throw new PermissionError('This dashboard call is not open to any role.');
  assertSessionMay(request, needed);
}
