-- What an account allows each of its customers (the platform's own end users): a default budget
-- per period and a default rate limit on the account, and per customer an override of either.
-- Like a key's, a customer's spending is never counted here: it is summed from its generations'
-- holds when a hold is placed, with the customer's row locked (core/ledger/customer-budgets.ts).
ALTER TABLE accounts ADD COLUMN customer_budget_mc bigint CHECK (customer_budget_mc >= 0);
ALTER TABLE accounts ADD COLUMN customer_budget_period text CHECK (customer_budget_period IN ('day', 'week', 'month', 'none'));
ALTER TABLE accounts ADD CONSTRAINT accounts_customer_budget_whole CHECK ((customer_budget_mc IS NULL) = (customer_budget_period IS NULL));
ALTER TABLE accounts ADD COLUMN customer_rate_limit integer CHECK (customer_rate_limit > 0);

-- One row per customer an account has held a generation for or set a limit on: the row its
-- admissions lock, so that concurrent holds of one customer take turns.
CREATE TABLE customers (
  account_id     text NOT NULL REFERENCES accounts (id),
  customer_id    text NOT NULL CHECK (char_length(customer_id) BETWEEN 1 AND 256),
  -- false: the account's default budget applies; true: max_mc per period does (max_mc NULL: no cap).
  budget_override boolean NOT NULL DEFAULT false,
  max_mc         bigint CHECK (max_mc >= 0),
  period         text CHECK (period IN ('day', 'week', 'month', 'none')),
  -- false: the account's default rate limit applies; true: rate_limit does (NULL: none).
  rate_override  boolean NOT NULL DEFAULT false,
  rate_limit     integer CHECK (rate_limit > 0),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, customer_id),
  CHECK (budget_override OR (max_mc IS NULL AND period IS NULL)),
  CHECK ((max_mc IS NULL) = (period IS NULL)),
  CHECK (rate_override OR rate_limit IS NULL)
);

-- customer.budget_reached: a customer's budget for its period is used up, or refused a hold.
ALTER TABLE account_alerts ADD COLUMN customer_id text;
ALTER TABLE account_alerts DROP CONSTRAINT account_alerts_event_check;
ALTER TABLE account_alerts ADD CONSTRAINT account_alerts_event_check
  CHECK (event IN ('balance.low', 'key.budget_reached', 'customer.budget_reached'));
ALTER TABLE account_alerts DROP CONSTRAINT account_alerts_check;
ALTER TABLE account_alerts ADD CONSTRAINT account_alerts_subject CHECK (
  CASE event
    WHEN 'balance.low' THEN key_id IS NULL AND customer_id IS NULL
    WHEN 'key.budget_reached' THEN key_id IS NOT NULL AND customer_id IS NULL AND period IS NOT NULL
    ELSE customer_id IS NOT NULL AND key_id IS NULL AND period IS NOT NULL
  END);
-- Once per customer, period and budget, as for keys.
CREATE UNIQUE INDEX account_alerts_customer_period ON account_alerts (account_id, customer_id, coalesce(period_start, '-infinity'), limit_mc)
  WHERE event = 'customer.budget_reached';
