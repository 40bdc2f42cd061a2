-- Long upstream jobs hold no worker slot: a queued video waits for its upstream's webhook
-- in an activity completed from outside (Temporal async completion). Each row is one upstream job a
-- run left waiting: the task token of the attempt now waiting for it, and when it was known to end
-- (a verified webhook, or the slow poll). Written by the provider steps and the webhook door, never
-- by the ledger: the charge still moves only when the workflow settles.
CREATE TABLE upstream_jobs (
  upstream       text NOT NULL,
  job_id         text NOT NULL,
  generation_id  text NOT NULL REFERENCES generations (id),
  -- The waiting attempt's token; each retried attempt (a slow poll) replaces it.
  task_token     bytea,
  ended_at       timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upstream, job_id)
);
CREATE INDEX upstream_jobs_generation ON upstream_jobs (generation_id);

-- Every verified provider webhook, by the id its upstream gives it: a replay finds its id here and
-- changes nothing (fal's retries and Replicate's redeliveries included).
CREATE TABLE provider_webhook_receipts (
  upstream     text NOT NULL,
  webhook_id   text NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upstream, webhook_id)
);
