import { errorResponses } from '../shared/schemas';
import type { ErrorStatus } from '../shared/schemas';

/** How every dashboard route is listed in the OpenAPI document. */
export const tags = ['Dashboard'];
export const security = [{ session: [] }];

/**
 * What every session route can answer. Changes (POST, PUT, PATCH, DELETE) can also answer 403: the
 * CSRF check, or a role without the route's permission (permissions.ts); so can the reads that
 * need more than `read` (the ledger, the audit log).
 */
export const sessionErrors = [401, 429, 500, 503] as const;

/** A read's error answers: its own and every session route's. */
export const errors = <const S extends readonly ErrorStatus[]>(...own: S) => errorResponses(...own, ...sessionErrors);

/** A change's error answers: its own, 403, and every session route's. */
export const changeErrors = <const S extends readonly ErrorStatus[]>(...own: S) =>
  errorResponses(...own, 403, ...sessionErrors);
