-- Per-key spending limits. A key with a row here may hold and spend at most `max_mc`
-- within each period (UTC day, ISO week, calendar month, or ever for 'none'). What the key has
-- spent is not kept as a counter: it is read from its generations' holds (held, or what a settled
-- one charged) at admission, with the budget row locked, so a release gives budget back and a
-- charge counts without any other ledger step touching this table.
CREATE TABLE api_key_budgets (
  key_id      text PRIMARY KEY REFERENCES api_keys (id),
  max_mc      bigint NOT NULL CHECK (max_mc >= 0),
  period      text NOT NULL CHECK (period IN ('day', 'week', 'month', 'none')),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The start of the period containing `at`, in UTC; 'none' counts everything the key ever spent.
CREATE FUNCTION budget_period_start(period text, at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE period
    WHEN 'day' THEN date_trunc('day', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    WHEN 'week' THEN date_trunc('week', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    WHEN 'month' THEN date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    ELSE '-infinity'::timestamptz
  END
$$;

-- The sum a budget check reads: a key's generations since the period's start.
CREATE INDEX generations_key_created ON generations (api_key_id, created_at) WHERE api_key_id IS NOT NULL;
