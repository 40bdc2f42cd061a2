-- A callback URL named on one job (a generation or a batch) is an endpoint row scoped to that job:
-- the outbox, the delivery workflow, the log and redelivery treat it as any endpoint, while the
-- account's own endpoints (the five it may register) are the rows with no job. A job's callback is
-- signed with the account's callback secret, so its row keeps none of its own.
ALTER TABLE webhook_endpoints
  ADD COLUMN job_generation_id text REFERENCES generations (id),
  ADD COLUMN job_batch_id text REFERENCES batches (id),
  ALTER COLUMN secret_sealed DROP NOT NULL,
  ADD CONSTRAINT webhook_endpoints_one_job CHECK (job_generation_id IS NULL OR job_batch_id IS NULL),
  ADD CONSTRAINT webhook_endpoints_own_secret
    CHECK ((secret_sealed IS NULL) = (job_generation_id IS NOT NULL OR job_batch_id IS NOT NULL));

-- One callback per job, whoever records it twice (a retried submit with the same Idempotency-Key).
CREATE UNIQUE INDEX webhook_endpoints_job_generation ON webhook_endpoints (job_generation_id)
  WHERE job_generation_id IS NOT NULL;
CREATE UNIQUE INDEX webhook_endpoints_job_batch ON webhook_endpoints (job_batch_id) WHERE job_batch_id IS NOT NULL;
-- The account's own endpoints, found without walking its jobs' callbacks on every state change.
CREATE INDEX webhook_endpoints_account_wide ON webhook_endpoints (account_id, id)
  WHERE job_generation_id IS NULL AND job_batch_id IS NULL;
-- The account's callback log, newest first.
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, id DESC);

-- The account's callback secret, sealed like endpoint secrets (associated data `callbacks:<account id>`),
-- rotated with the same overlap.
CREATE TABLE callback_secrets (
  account_id                  text PRIMARY KEY REFERENCES accounts (id),
  secret_sealed               text NOT NULL,
  previous_secret_sealed      text,
  previous_secret_expires_at  timestamptz,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now()
);
