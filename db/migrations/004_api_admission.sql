-- The API now claims an Idempotency-Key in the same transaction that places the hold, so a claim
-- exists exactly when its generation does. Claims made by the earlier code for requests that were
-- refused (402) never got a generation; free those keys.
DELETE FROM idempotency_keys k WHERE NOT EXISTS (SELECT 1 FROM generations g WHERE g.id = k.generation_id);

-- Group A lists an account's generations filtered by kind or status, newest first.
CREATE INDEX generations_account_kind ON generations (account_id, kind, id DESC);
CREATE INDEX generations_account_status ON generations (account_id, status, id DESC);
