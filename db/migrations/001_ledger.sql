-- Accounts, keys, generations, holds and the append-only ledger. Money is integer millicredits.

CREATE TABLE accounts (
  id          text PRIMARY KEY,
  plan        text NOT NULL CHECK (plan IN ('free', 'ronin', 'shinobi', 'samurai')),
  balance_mc  bigint NOT NULL DEFAULT 0,
  held_mc     bigint NOT NULL DEFAULT 0,
  chat_cap    integer NOT NULL DEFAULT 0 CHECK (chat_cap >= 0),
  chat_used   integer NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- No code path can overdraw: the available balance never goes below zero.
  CONSTRAINT accounts_no_overdraft CHECK (held_mc >= 0 AND balance_mc - held_mc >= 0),
  CONSTRAINT accounts_chat_allowance CHECK (chat_used >= 0 AND chat_used <= chat_cap)
);

CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts (id),
  key_hash    bytea NOT NULL UNIQUE,
  key_hint    text NOT NULL,
  scopes      text[] NOT NULL,
  models      text[],
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE generations (
  id            text PRIMARY KEY,
  account_id    text NOT NULL REFERENCES accounts (id),
  api_key_id    text REFERENCES api_keys (id),
  kind          text NOT NULL CHECK (kind IN ('image', 'video', 'chat', 'upscale')),
  model         text NOT NULL,
  status        text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  params        jsonb NOT NULL DEFAULT '{}',
  prompt        text NOT NULL DEFAULT '',
  quote_mc      bigint NOT NULL CHECK (quote_mc >= 0),
  charged_mc    bigint NOT NULL DEFAULT 0 CHECK (charged_mc >= 0),
  free_chat     boolean NOT NULL DEFAULT false,
  output_key    text,
  output_text   text,
  error         jsonb,
  created_at    timestamptz NOT NULL DEFAULT now(),
  started_at    timestamptz,
  finished_at   timestamptz,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX generations_account_created ON generations (account_id, id DESC);
-- The video slot query counts and orders an account's live videos.
CREATE INDEX generations_live_video ON generations (account_id, status, id)
  WHERE kind = 'video' AND status IN ('queued', 'running');

-- One hold per generation; it moves once, from held to settled or released.
CREATE TABLE holds (
  generation_id  text PRIMARY KEY REFERENCES generations (id),
  account_id     text NOT NULL REFERENCES accounts (id),
  amount_mc      bigint NOT NULL CHECK (amount_mc >= 0),
  free_chat      boolean NOT NULL DEFAULT false,
  state          text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'settled', 'released')),
  charged_mc     bigint CHECK (charged_mc >= 0 AND charged_mc <= amount_mc),
  created_at     timestamptz NOT NULL DEFAULT now(),
  resolved_at    timestamptz
);
CREATE INDEX holds_active ON holds (account_id) WHERE state = 'held';

-- Every movement of money, for audit. Rows are never changed or removed.
CREATE TABLE ledger_entries (
  id                bigserial PRIMARY KEY,
  account_id        text NOT NULL REFERENCES accounts (id),
  generation_id     text REFERENCES generations (id),
  entry             text NOT NULL CHECK (entry IN ('credit', 'hold', 'charge', 'release')),
  amount_mc         bigint NOT NULL CHECK (amount_mc >= 0),
  balance_after_mc  bigint NOT NULL,
  held_after_mc     bigint NOT NULL,
  note              text,
  created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id);

CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_entries is append-only';
END;
$$;
CREATE TRIGGER ledger_entries_append_only
  BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only();
