-- A chat choice of a batch line that succeeded before the others of its line keeps its hold until
-- they have ended: what its settle would have charged waits here, and the line's last success
-- charges every choice from it (core/ledger/line-choices.ts).
ALTER TABLE holds ADD COLUMN choice_report jsonb;
