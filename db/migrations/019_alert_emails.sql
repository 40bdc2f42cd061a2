-- Alerts by email (issue 20). The mail relay (runtime/mail-relay.ts, beside the workers) turns each
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
