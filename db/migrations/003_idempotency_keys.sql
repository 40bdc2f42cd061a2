-- Idempotency-Key: the same key and body within 24 h return the same generation (no second hold).
CREATE TABLE idempotency_keys (
  account_id     text NOT NULL REFERENCES accounts (id),
  key            text NOT NULL,
  request_hash   bytea NOT NULL,
  generation_id  text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, key)
);
