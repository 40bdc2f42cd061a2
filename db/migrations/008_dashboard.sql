-- Dashboard users, the one-time links that set their passwords, their sessions, and when each API
-- key was last used. Secrets are never stored: passwords as scrypt hashes, link and session tokens
-- as SHA-256 hashes.

CREATE TABLE users (
  id               text PRIMARY KEY,
  account_id       text NOT NULL REFERENCES accounts (id),
  -- Compared lower-cased: one user per address, however it is typed.
  email            text NOT NULL,
  -- scrypt$<N>$<r>$<p>$<salt>$<hash> (base64url); NULL until the user has followed their link.
  password_hash    text,
  password_set_at  timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT users_email_lower CHECK (email = lower(email))
);
CREATE UNIQUE INDEX users_email ON users (email);
CREATE INDEX users_account ON users (account_id);

-- A link to set a password: single use (used_at), expiring. A new link does not revoke older ones;
-- setting a password does.
CREATE TABLE password_links (
  token_hash  bytea PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX password_links_user ON password_links (user_id);

CREATE TABLE sessions (
  token_hash    bytea PRIMARY KEY,
  user_id       text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at    timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  user_agent    text
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- Written by the auth hook at most about once a minute per key (the UPDATE checks the age itself).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- The dashboard's live view starts from the account's generations in flight: a small index, as
-- only queued and running rows are in it.
CREATE INDEX generations_in_flight ON generations (account_id, id) WHERE status IN ('queued', 'running');
