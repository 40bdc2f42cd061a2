-- Alerts by email. The mail relay (runtime/mail-relay.ts, beside the workers) turns each
-- new alert into one row per recipient (the account's dashboard users who set a password), then
-- sends each row, outside any money transaction. The primary key makes a recipient get an alert
-- once however often the relay expands it; a row is locked while it is sent and marked sent in
-- that transaction, so two relays never send it twice (a crash after the SMTP server accepted it
-- and before the commit sends it again, with the same Message-ID).
ALTER TABLE account_alerts ADD COLUMN mailed_at timestamptz;
CREATE INDEX account_alerts_unmailed ON account_alerts (id) WHERE mailed_at IS NULL;

CREATE TABLE alert_emails (
  alert_id         text NOT NULL REFERENCES account_alerts (id),
  recipient        text NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts         integer NOT NULL DEFAULT 0,
  last_error       text,
  next_attempt_at  timestamptz NOT NULL DEFAULT now(),
  sent_at          timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (alert_id, recipient)
);
CREATE INDEX alert_emails_due ON alert_emails (next_attempt_at) WHERE status = 'pending';

-- Self-service sign-up (SIGNUP=open). A request is a row here, whether or not the address already
-- has a user (so the answer and its work are the same either way); the mail relay sends its link
-- (or, to an address that has an account, a note saying so), then forgets the token (`mail_token`,
-- kept in clear only until it is mailed; the link is checked against `token_hash`). Following the
-- link once, before it expires, creates the account and its user with the password given then.
CREATE TABLE signups (
  token_hash     bytea PRIMARY KEY,
  email          text NOT NULL CHECK (email = lower(email)),
  password_hash  text NOT NULL,
  mail_token     text,
  mailed_at      timestamptz,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX signups_unmailed ON signups (created_at) WHERE mailed_at IS NULL;
