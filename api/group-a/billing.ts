import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { BillingService } from '../../service/billing/purchases';
import { principalOf, requireApiKey } from '../shared/auth';
import type { AuthDeps } from '../shared/auth';
import { errorResponses } from '../shared/schemas';

const tags = ['Billing'];

/**
 * Buying credits, registered only when Stripe is configured: a Checkout Session for the
 * key's account, and the endpoint Stripe sends its signed events to.
 */
export const billingRoutes: FastifyPluginAsyncZod<
  AuthDeps & { billing: BillingService; publicBaseUrl?: string | undefined }
> = async (app, deps) => {
  const { minCredits, maxCredits } = deps.billing.limits;

  await app.register(async (keyed) => {
    keyed.addHook('onRequest', requireApiKey(deps, 'authentication_error'));
    keyed.withTypeProvider<ZodTypeProvider>().post(
      '/api/v1/billing/checkout',
      {
        schema: {
          operationId: 'createCheckout',
          tags,
          security: [{ apiKey: [] }],
          summary: 'Buy credits: a Stripe Checkout page for the key’s account (1 credit = 0.01 EUR)',
          description: `Open the answered url in a browser and pay; the account is credited once Stripe reports the payment (ledger entry type topup). ${minCredits} to ${maxCredits} credits.`,
          body: z
            .strictObject({ credits: z.number().int().describe(`Whole credits, ${minCredits} to ${maxCredits}`) })
            .meta({ id: 'CheckoutRequest', examples: [{ credits: 1000 }] }),
          response: {
            200: z
              .object({
                id: z.string().describe('The Checkout Session (cs_…)'),
                url: z.string().describe('Where the buyer pays'),
              })
              .meta({ id: 'Checkout' }),
            ...errorResponses(400, 401, 429, 500, 503),
          },
        },
      },
      async (request) =>
        deps.billing.checkout(
          principalOf(request),
          request.body.credits,
          deps.publicBaseUrl ?? `${request.protocol}://${request.host}`,
        ),
    );
  });

  // Stripe signs the exact bytes it sent: this route keeps the body unparsed.
  await app.register(async (hook) => {
    hook.removeAllContentTypeParsers();
    hook.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 * 1024 }, (_request, body, done) =>
      done(null, body),
    );
    hook.withTypeProvider<ZodTypeProvider>().post(
      '/api/v1/billing/stripe/webhook',
      {
        schema: {
          operationId: 'stripeWebhook',
          tags,
          security: [],
          summary: 'Stripe’s webhook endpoint: verified with the Stripe-Signature header',
          description:
            'Handles checkout.session.completed and checkout.session.async_payment_succeeded (credit, once per payment), charge.refunded and charge.dispute.closed when lost (debit what was refunded, never below what is held). Anything else is acknowledged.',
          headers: z.looseObject({ 'stripe-signature': z.string().max(2_000).optional() }),
          response: {
            200: z.object({
              received: z.literal(true),
              outcome: z.enum(['credited', 'debited', 'already', 'ignored']),
            }),
            ...errorResponses(400, 500, 503),
          },
        },
      },
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return {
          received: true as const,
          outcome: await deps.billing.handleEvent(raw, request.headers['stripe-signature']),
        };
      },
    );
  });
};
