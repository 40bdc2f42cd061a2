-- Alerts: `balance.low` when an account's available credits (balance − held) fall
-- below its threshold, and `key.budget_reached` when a key's budget for its period is used up or
-- refuses a hold. An alert is a row of its own, written by the ledger transaction that detected
-- it; its webhook deliveries (and later emails) point at it, so a payload built days later still
-- says what the account looked like at the crossing.
ALTER TABLE accounts ADD COLUMN low_balance_mc bigint CHECK (low_balance_mc >= 0);
-- True from a crossing below the threshold until money comes in that lifts the available credits
-- back to it (or the threshold is set again): one alert per crossing, whoever holds concurrently,
-- because the flag flips under the account row's lock.
ALTER TABLE accounts ADD COLUMN low_balance_alerted boolean NOT NULL DEFAULT false;

CREATE TABLE account_alerts (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts (id),
  event         text NOT NULL CHECK (event IN ('balance.low', 'key.budget_reached')),
  key_id        text REFERENCES api_keys (id),
  -- balance.low: the available credits after the crossing; key.budget_reached: what the key had spent.
  amount_mc     bigint NOT NULL,
  -- balance.low: the account's threshold; key.budget_reached: the key's budget.
  limit_mc      bigint NOT NULL,
  period        text,
  period_start  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  CHECK ((event = 'key.budget_reached') = (key_id IS NOT NULL AND period IS NOT NULL))
);
CREATE INDEX account_alerts_account ON account_alerts (account_id, id DESC);
-- Once per key, period and budget: a budget changed (limit_mc) may be reached again.
CREATE UNIQUE INDEX account_alerts_key_period ON account_alerts (key_id, coalesce(period_start, '-infinity'), limit_mc)
  WHERE event = 'key.budget_reached';

ALTER TABLE webhook_deliveries ADD COLUMN alert_id text REFERENCES account_alerts (id);
CREATE UNIQUE INDEX webhook_deliveries_alert_once ON webhook_deliveries (endpoint_id, alert_id) WHERE alert_id IS NOT NULL;
