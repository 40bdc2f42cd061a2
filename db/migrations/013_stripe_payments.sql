-- Credits bought with Stripe Checkout. One row per paid Checkout Session: its primary
-- key is what makes a payment credit the account once, whoever delivers the event and how often.
-- A refund debits the account (ledger entry `refund`) by what was refunded since the last one,
-- but never below what is held: `refunded_cents` is the refunded total already accounted for,
-- `debited_mc` what was actually taken.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_entry_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_entry_check CHECK (entry IN ('credit', 'hold', 'charge', 'release', 'refund'));

CREATE TABLE stripe_payments (
  checkout_session_id  text PRIMARY KEY,
  payment_intent_id    text UNIQUE,
  account_id           text NOT NULL REFERENCES accounts (id),
  credits_mc           bigint NOT NULL CHECK (credits_mc > 0),
  amount_cents         bigint NOT NULL CHECK (amount_cents > 0),
  refunded_cents       bigint NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0),
  debited_mc           bigint NOT NULL DEFAULT 0 CHECK (debited_mc >= 0),
  event_id             text NOT NULL,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stripe_payments_account ON stripe_payments (account_id, created_at DESC);
