-- A video waiting for one of its account's slots holds no worker activity slot (benchmark finding
-- 7): each attempt of its wait tries the claim once and, when an older video or the account's limit
-- stands in the way, leaves its Temporal task token here and completes asynchronously. Whoever frees
-- a slot of the account claims it for the oldest queued video and completes that video's token
-- (activities/generation/slots.ts). Written only by the ledger's slot claims (core/ledger/video-slots.ts), in
-- the transaction that holds the account's lock, so a claim and a park never miss each other.
CREATE TABLE video_slot_waits (
  generation_id  text PRIMARY KEY REFERENCES generations (id),
  account_id     text NOT NULL REFERENCES accounts (id),
  -- The waiting attempt's token; each retried attempt (the safety poll) replaces it.
  task_token     bytea NOT NULL,
  -- When the current attempt parked: a row much older than the poll period is a wait nobody looks at.
  parked_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX video_slot_waits_account ON video_slot_waits (account_id);
