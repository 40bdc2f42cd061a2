import type pg from 'pg';
import { inTransaction } from '../db/pool';
import type { Millicredits } from '../money';
import { recordBalanceLow } from './alerts';
import { credit } from './credit';
import { appendEntry } from './entries';
import type { AccountMoney } from './entries';
import { classified } from './failures';
import { ledgerSpan } from './span';

/** A paid Stripe Checkout Session, as its signed event describes it. */
export interface PaidCheckout {
  sessionId: string;
  paymentIntentId: string | null;
  accountId: string;
  creditsMc: Millicredits;
  amountCents: number;
  eventId: string;
}

export type PurchaseOutcome = 'credited' | 'already' | 'unknown_account';

/**
 * Credits a paid Checkout Session once: the payment's row and the credit are one transaction, and
 * the row's primary key is the session, so a redelivered or concurrent event finds it (a second
 * insert waits for the first to commit, then does nothing) and changes nothing.
 */
export function creditPurchase(pool: pg.Pool, p: PaidCheckout): Promise<PurchaseOutcome> {
  return ledgerSpan('purchase', { 'gensvc.account_id': p.accountId }, () =>
    classified(() =>
      inTransaction(pool, async (tx) => {
        const account = await tx.query('SELECT 1 FROM accounts WHERE id = $1', [p.accountId]);
        if ((account.rowCount ?? 0) === 0) return 'unknown_account';
        const inserted = await tx.query(
          `INSERT INTO stripe_payments (checkout_session_id, payment_intent_id, account_id, credits_mc, amount_cents, event_id)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (checkout_session_id) DO NOTHING`,
          [p.sessionId, p.paymentIntentId, p.accountId, p.creditsMc, p.amountCents, p.eventId],
        );
        if ((inserted.rowCount ?? 0) === 0) return 'already';
        await credit(
          tx,
          p.accountId,
          p.creditsMc,
          `topup stripe ${p.sessionId}${p.paymentIntentId ? ` ${p.paymentIntentId}` : ''}`,
        );
        return 'credited';
      }),
    ),
  );
}

export type RefundOutcome =
  | { outcome: 'debited'; owedMc: Millicredits; debitedMc: Millicredits }
  | { outcome: 'already' }
  | { outcome: 'unknown_payment' };

/**
 * A payment refunded (or a dispute lost) up to `refundedCents` in total: debits the credits of what
 * was refunded since the last time, but never more than the account has free (held credits stay
 * held, so running generations still settle). Stripe sends the refunded total, so events that come
 * again or out of order change nothing.
 */
export function debitRefund(
  pool: pg.Pool,
  r: { paymentIntentId: string; refundedCents: number; eventId: string },
): Promise<RefundOutcome> {
  return ledgerSpan('refund', {}, () =>
    classified(() =>
      inTransaction(pool, async (tx): Promise<RefundOutcome> => {
        const found = await tx.query<{
          checkout_session_id: string;
          account_id: string;
          credits_mc: number;
          amount_cents: number;
          refunded_cents: number;
        }>(
          'SELECT checkout_session_id, account_id, credits_mc, amount_cents, refunded_cents FROM stripe_payments WHERE payment_intent_id = $1 FOR UPDATE',
          [r.paymentIntentId],
        );
        const payment = found.rows[0];
        if (!payment) return { outcome: 'unknown_payment' };
        const refunded = Math.min(r.refundedCents, payment.amount_cents);
        if (refunded <= payment.refunded_cents) return { outcome: 'already' };
        const owedMc = Math.round(((refunded - payment.refunded_cents) * payment.credits_mc) / payment.amount_cents);
        const moved = await tx.query<AccountMoney & { debited_mc: number }>(
          `WITH before AS (SELECT id, LEAST($2::bigint, GREATEST(balance_mc - held_mc, 0)) AS debit FROM accounts WHERE id = $1 FOR UPDATE)
       UPDATE accounts a SET balance_mc = a.balance_mc - before.debit FROM before WHERE a.id = before.id
       RETURNING a.balance_mc, a.held_mc, before.debit AS debited_mc`,
          [payment.account_id, owedMc],
        );
        const after = moved.rows[0]!;
        await appendEntry(tx, {
          accountId: payment.account_id,
          generationId: null,
          entry: 'refund',
          amountMc: after.debited_mc,
          after,
          note: `refund stripe ${r.paymentIntentId}${after.debited_mc < owedMc ? ` (owed ${owedMc / 1000} credits; the rest was held or spent)` : ''}`,
        });
        await recordBalanceLow(tx, payment.account_id);
        await tx.query(
          'UPDATE stripe_payments SET refunded_cents = $2, debited_mc = debited_mc + $3, updated_at = now() WHERE checkout_session_id = $1',
          [payment.checkout_session_id, refunded, after.debited_mc],
        );
        return { outcome: 'debited', owedMc, debitedMc: after.debited_mc };
      }),
    ),
  );
}
