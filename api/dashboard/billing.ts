import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BillingService } from '../../service/billing/purchases';
import { principalOf } from '../shared/auth';
import { changeErrors, errors, security, tags } from './route-docs';

/** The billing page's calls (mounted inside the session scope when Stripe is configured): the limits of a purchase, and buying credits. */
export const billingRoutes: FastifyPluginAsyncZod<{
  billing: BillingService;
  /** Where Stripe sends the buyer back (PUBLIC_BASE_URL's origin); the request's own when absent. */
  publicBaseUrl: string | undefined;
}> = async (app, { billing, publicBaseUrl }) => {
  const route = app.withTypeProvider<ZodTypeProvider>();

  route.get(
    '/dashboard/api/billing',
    {
      schema: {
        operationId: 'dashboardBilling',
        tags,
        security,
        summary: 'How many credits one purchase may buy (1 credit = 0.01 EUR)',
        response: {
          200: z
            .object({ minCredits: z.number().int(), maxCredits: z.number().int(), eurPerCredit: z.number() })
            .meta({ id: 'DashboardBilling' }),
          ...errors(),
        },
      },
    },
    async () => ({ ...billing.limits, eurPerCredit: 0.01 }),
  );

  route.post(
    '/dashboard/api/billing/checkout',
    {
      schema: {
        operationId: 'dashboardCheckout',
        tags,
        security,
        summary: 'Buy credits: a Stripe Checkout page for the account (the same as POST /api/v1/billing/checkout)',
        body: z
          .strictObject({
            credits: z.number().int().describe('Whole credits within the limits of GET /dashboard/api/billing'),
          })
          .meta({ id: 'DashboardCheckoutRequest' }),
        response: {
          200: z
            .object({ id: z.string(), url: z.string().describe('Where the buyer pays') })
            .meta({ id: 'DashboardCheckout' }),
          ...changeErrors(400),
        },
      },
    },
    async (request) =>
      billing.checkout(
        principalOf(request),
        request.body.credits,
        publicBaseUrl ?? `${request.protocol}://${request.host}`,
      ),
  );
};
