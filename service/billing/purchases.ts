import type pg from 'pg';
import Stripe from 'stripe';
import { InvalidRequestError, ServiceUnavailableError } from '../../core/errors';
import { creditPurchase, debitRefund } from '../../core/ledger';
import { creditsToMc } from '../../core/money';
import type { Principal } from '../../core/accounts/principal';

/** Buying credits with Stripe: enabled when both the API key and the webhook signing secret are set. */
export interface BillingOptions {
  secretKey: string;
  webhookSecret: string;
  /** The fewest and most credits one checkout buys (1 credit = 0.01 EUR). */
  minPurchaseCredits: number;
  maxPurchaseCredits: number;
  /** Where the Stripe API is (stripe-mock in tests); Stripe's own when absent. */
  apiUrl?: string | undefined;
}

export class WebhookSignatureError extends InvalidRequestError {
  constructor() {
    super(
      'The Stripe-Signature header does not verify (forged, altered or too old); nothing was credited.',
      'Stripe-Signature',
    );
  }
}

/** 1 credit = 0.01 EUR = 1 euro cent: the unit price of the Checkout line. */
const CENTS_PER_CREDIT = 1;

export type BillingEventOutcome = 'credited' | 'debited' | 'already' | 'ignored';

export function createBillingService(deps: { pool: pg.Pool; options: BillingOptions }) {
  const { pool, options } = deps;
  const stripe = stripeClient(options);
  return {
    limits: { minCredits: options.minPurchaseCredits, maxCredits: options.maxPurchaseCredits },

    /** A Checkout Session for `credits` of the principal's account; the account is credited when Stripe says it is paid. */
    checkout: (principal: Principal, credits: number, returnBase: string): Promise<{ id: string; url: string }> =>
      checkout(stripe, options, principal, credits, returnBase),

    /**
     * A webhook event, verified with the SDK against the endpoint's signing secret (which also
     * refuses a timestamp older than five minutes: a captured event sent again later). A paid checkout credits once;
     * a refund or a lost dispute debits what was refunded; anything else is acknowledged and ignored.
     */
    async handleEvent(rawBody: Buffer, signature: string | undefined): Promise<BillingEventOutcome> {
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature ?? '', options.webhookSecret);
      } catch {
        throw new WebhookSignatureError();
      }
      return applyEvent(pool, event);
    },
  };
}

/** The Stripe SDK, aimed at `apiUrl` when one is given (stripe-mock in tests). */
function stripeClient(options: BillingOptions): Stripe {
  const api = options.apiUrl ? new URL(options.apiUrl) : undefined;
  return new Stripe(options.secretKey, {
    maxNetworkRetries: 2,
    ...(api
      ? {
          host: api.hostname,
          port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)),
          protocol: api.protocol === 'http:' ? 'http' : 'https',
        }
      : {}),
  });
}

async function checkout(
  stripe: Stripe,
  options: BillingOptions,
  principal: Principal,
  credits: number,
  returnBase: string,
): Promise<{ id: string; url: string }> {
  if (!Number.isInteger(credits) || credits < options.minPurchaseCredits || credits > options.maxPurchaseCredits) {
    throw new InvalidRequestError(
      `credits must be a whole number from ${options.minPurchaseCredits} to ${options.maxPurchaseCredits} (1 credit = 0.01 EUR).`,
      'credits',
    );
  }
  const metadata = { accountId: principal.accountId, credits: String(credits) };
  let session: Stripe.Checkout.Session;
  try {
    session = await stripe.checkout.sessions.create({
      mode: 'payment',
      client_reference_id: principal.accountId,
      metadata,
      payment_intent_data: { metadata },
      line_items: [
        {
          quantity: credits,
          price_data: {
            currency: 'eur',
            unit_amount: CENTS_PER_CREDIT,
            product_data: { name: 'Generation credits' },
          },
        },
      ],
      success_url: `${returnBase}/dashboard?checkout=success`,
      cancel_url: `${returnBase}/dashboard?checkout=cancelled`,
    });
  } catch (err) {
    throw new ServiceUnavailableError(
      'The payment provider could not be reached; nothing was charged. Retry shortly.',
      { cause: err },
    );
  }
  if (!session.url)
    throw new ServiceUnavailableError(
      'The payment provider answered without a checkout URL; nothing was charged. Retry shortly.',
    );
  return { id: session.id, url: session.url };
}

/** What a verified event does to the ledger: a paid checkout credits, a refund or a lost dispute debits. */
async function applyEvent(pool: pg.Pool, event: Stripe.Event): Promise<BillingEventOutcome> {
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const s = event.data.object;
      if (s.payment_status !== 'paid') return 'ignored';
      const paid = paidCheckout(s, event.id);
      if (!paid) return 'ignored';
      const outcome = await creditPurchase(pool, paid);
      return outcome === 'credited' ? 'credited' : outcome === 'already' ? 'already' : 'ignored';
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      const pi = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent?.id;
      if (!pi) return 'ignored';
      const r = await debitRefund(pool, {
        paymentIntentId: pi,
        refundedCents: charge.amount_refunded,
        eventId: event.id,
      });
      return r.outcome === 'debited' ? 'debited' : r.outcome === 'already' ? 'already' : 'ignored';
    }
    case 'charge.dispute.closed': {
      const dispute = event.data.object;
      const pi = typeof dispute.payment_intent === 'string' ? dispute.payment_intent : dispute.payment_intent?.id;
      if (dispute.status !== 'lost' || !pi) return 'ignored';
      const r = await debitRefund(pool, { paymentIntentId: pi, refundedCents: dispute.amount, eventId: event.id });
      return r.outcome === 'debited' ? 'debited' : r.outcome === 'already' ? 'already' : 'ignored';
    }
    default:
      return 'ignored';
  }
}

/** The purchase a paid Checkout Session records, or undefined when it is not one we priced. */
function paidCheckout(s: Stripe.Checkout.Session, eventId: string) {
  const accountId = s.metadata?.accountId ?? s.client_reference_id;
  const credits = Number(s.metadata?.credits);
  // The credits we priced at checkout must be what was paid for; anything else is not ours.
  if (
    !accountId ||
    !Number.isInteger(credits) ||
    credits <= 0 ||
    s.amount_total !== credits * CENTS_PER_CREDIT ||
    s.currency !== 'eur'
  )
    return undefined;
  const paymentIntentId = typeof s.payment_intent === 'string' ? s.payment_intent : (s.payment_intent?.id ?? null);
  return {
    sessionId: s.id,
    paymentIntentId,
    accountId,
    creditsMc: creditsToMc(credits),
    amountCents: s.amount_total,
    eventId,
  };
}

export type BillingService = ReturnType<typeof createBillingService>;
