-- Every status change of an account's generations takes the account's next change number, in the
-- transaction that makes it and under the account row's lock: numbers follow commit order, so a
-- live stream that resumes after number N reads exactly the changes committed after it.
ALTER TABLE accounts ADD COLUMN change_seq bigint NOT NULL DEFAULT 0;
-- The number of the generation's latest status change; null for rows not changed since this column came.
ALTER TABLE generations ADD COLUMN change_seq bigint;
CREATE INDEX generations_account_change ON generations (account_id, change_seq) WHERE change_seq IS NOT NULL;
