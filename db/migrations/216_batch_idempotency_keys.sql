-- An Idempotency-Key on a batch create stands for the batch it made, as one on a generate stands
-- for the request's first generation: each key names exactly one of the two.
ALTER TABLE idempotency_keys ALTER COLUMN generation_id DROP NOT NULL;
ALTER TABLE idempotency_keys ADD COLUMN batch_id text;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_one_job CHECK ((generation_id IS NULL) <> (batch_id IS NULL));
