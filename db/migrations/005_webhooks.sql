-- Webhook endpoints, their deliveries (also the outbox the generation transactions write to) and
-- every attempt of every delivery.

CREATE TABLE webhook_endpoints (
  id                          text PRIMARY KEY,
  account_id                  text NOT NULL REFERENCES accounts (id),
  url                         text NOT NULL,
  format                      text NOT NULL CHECK (format IN ('nested', 'flat')),
  -- NULL: every event of the format's catalogue.
  events                      text[],
  description                 text,
  enabled                     boolean NOT NULL DEFAULT true,
  disabled_reason             text,
  disabled_at                 timestamptz,
  -- Secrets are needed to sign, so they are kept encrypted (AES-256-GCM), never in clear.
  secret_sealed               text NOT NULL,
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  -- Start of the current run of failed attempts; NULL after a success.
  failing_since               timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT webhook_endpoints_disabled_reason CHECK (enabled OR disabled_reason IS NOT NULL)
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);

-- One row per event per endpoint, written in the transaction that records the generation's state.
-- `dispatched_at` is NULL until the relay has started its delivery workflow: the outbox.
CREATE TABLE webhook_deliveries (
  id                text PRIMARY KEY,
  endpoint_id       text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  account_id        text NOT NULL REFERENCES accounts (id),
  event             text NOT NULL,
  generation_id     text REFERENCES generations (id),
  status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts          integer NOT NULL DEFAULT 0,
  last_status_code  integer,
  last_error        text,
  next_attempt_at   timestamptz,
  dispatched_at     timestamptz,
  delivered_at      timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  -- One state change, one delivery per endpoint, whoever records it twice.
  CONSTRAINT webhook_deliveries_once UNIQUE (endpoint_id, generation_id, event)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_outbox ON webhook_deliveries (id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_attempts (
  delivery_id       text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt           integer NOT NULL CHECK (attempt >= 1),
  started_at        timestamptz NOT NULL,
  duration_ms       integer NOT NULL CHECK (duration_ms >= 0),
  status_code       integer,
  error             text,
  response_excerpt  text,
  next_retry_at     timestamptz,
  PRIMARY KEY (delivery_id, attempt)
);
