-- Teams: each dashboard user of an account has a role (core/roles.ts says what each may
-- do). Users from before roles could do everything, so they are owners.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'owner'
  CHECK (role IN ('owner', 'admin', 'developer', 'billing', 'viewer'));
ALTER TABLE users ALTER COLUMN role DROP DEFAULT;

-- The audit log: every change of a role, a user, a key, a budget, a webhook endpoint, a threshold
-- or a customer's limits, written in the transaction of the change. Who (a dashboard user, a key,
-- or the operator), what, on what, when and from which address; kept when the user or key is gone.
CREATE TABLE audit_events (
  id           text PRIMARY KEY,
  account_id   text NOT NULL REFERENCES accounts (id),
  actor_type   text NOT NULL CHECK (actor_type IN ('user', 'key', 'operator')),
  -- The user's or key's id (null for the operator); the user's email as it was then.
  actor_id     text,
  actor_email  text,
  ip           text,
  action       text NOT NULL,
  -- What was changed: a user, key, webhook endpoint or customer id; null for the account itself.
  target       text,
  details      jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_account ON audit_events (account_id, id DESC);
