import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { UnauthorizedError } from '../../core/errors';
import type { OutputStore } from '../../core/storage/output-store';
import type { BatchService } from '../../service/batches/service';
import type { GenerationService } from '../../service/generation/service';
import type { BillingService } from '../../service/billing/purchases';
import type { SignupService } from '../../service/accounts/signup';
import type { WebhookService } from '../../service/webhooks/endpoints';
import { customerRoutes } from '../customers/routes';
import { auditRoutes } from '../audit/routes';
import { webhookRoutes } from '../webhooks/routes';
import { admitSession, rateLimited } from '../shared/auth';
import type { SessionAuthDeps } from '../shared/auth';
import type { StandingMonitor } from '../shared/standing';
import { accountRoutes } from './account';
import { dashboardBatchRoutes } from './batches';
import { billingRoutes } from './billing';
import { generationRoutes } from './generations';
import { keyRoutes } from './keys';
import { assertRoleMay } from './permissions';
import { security, sessionErrors, tags } from './route-docs';
import { loginRoutes, sessionRoutes } from './session';
import type { LoginLimits } from './session';
import { signupRoutes } from './signup';
import { teamRoutes } from './team';
import { usageRoutes } from './usage';

/** Limits of the dashboard's own calls, per user, per 60 s window. */
export interface DashboardLimits extends LoginLimits {
  /** Every call of a logged-in user (pages load several; the live view is one). */
  requestsPerMinute: number;
}

export const DEFAULT_DASHBOARD_LIMITS: DashboardLimits = { requestsPerMinute: 600, loginsPerEmail: 5, loginsPerIp: 20 };

export interface DashboardApiDeps extends SessionAuthDeps {
  service: GenerationService;
  /** Checks open live streams' sessions (api/shared/standing.ts). */
  standing: StandingMonitor;
  batches: BatchService;
  webhooks: WebhookService;
  store: OutputStore;
  limits: DashboardLimits;
  /** Self-service sign-up, when SIGNUP=open; its routes are absent otherwise. */
  signup?: SignupService | undefined;
  /** Buying credits, when Stripe is configured; the Billing routes are absent otherwise. */
  billing?: BillingService | undefined;
  /** Where Stripe sends the buyer back (PUBLIC_BASE_URL's origin); the request's own when absent. */
  publicBaseUrl?: string | undefined;
}

/** The dashboard's JSON calls under /dashboard/api: a session cookie, and its CSRF token on every change. */
export const dashboardApiRoutes: FastifyPluginAsyncZod<DashboardApiDeps> = async (app, deps) => {
  const { sessions, limiter, limits, signup, billing } = deps;
  const noStore = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('Cache-Control', 'no-store');
  };
  app.addHook('onRequest', noStore);

  // Before there is a session: the origin is checked and attempts are counted.
  await app.register(loginRoutes, { sessions, limiter, limits });
  if (signup) await app.register(signupRoutes, { sessions, limiter, limits, signup });

  await app.register(async (authed) => {
    authed.addHook('onRequest', async (request, reply) => {
      if (!(await admitSession(sessions, request)))
        throw new UnauthorizedError('Log in to the dashboard first (/dashboard/login).');
      await rateLimited(limiter, reply, `dashboard:${request.session!.userId}`, limits.requestsPerMinute);
      // Every route needs its permission (permissions.ts); the member's role is read with the session.
      assertRoleMay(request);
    });

    await authed.register(sessionRoutes, { sessions });
    await authed.register(accountRoutes, { pool: deps.pool, service: deps.service });
    if (billing) await authed.register(billingRoutes, { billing, publicBaseUrl: deps.publicBaseUrl });
    await authed.register(usageRoutes, { pool: deps.pool });
    await authed.register(generationRoutes, { service: deps.service, standing: deps.standing });
    await authed.register(keyRoutes, { pool: deps.pool });
    await authed.register(dashboardBatchRoutes, { batches: deps.batches, service: deps.service });

    const sessionDoor = {
      base: '/dashboard/api',
      authenticate: async () => undefined,
      security,
      tags,
      operationPrefix: 'dashboard',
      errors: sessionErrors,
      changeErrors: [403] as const,
    };
    // Customers and the audit log as group A has them, with the session (and its role) instead of a key.
    await authed.register(customerRoutes, { pool: deps.pool, door: sessionDoor });
    await authed.register(auditRoutes, { pool: deps.pool, door: sessionDoor });
    await authed.register(teamRoutes, { pool: deps.pool, publicBaseUrl: deps.publicBaseUrl, errors: sessionErrors });
    // The webhook API of group A, at /dashboard/api/webhooks with the session instead of a key.
    await authed.register(webhookRoutes, { webhooks: deps.webhooks, door: sessionDoor });
  });
};
