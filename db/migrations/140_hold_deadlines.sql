-- A hold the API resolves itself (a chat it runs, whose workflow starts once the reply has ended
-- and records the outcome) has no workflow while the reply runs. Its deadline says until when the
-- API is expected to settle or release it; past it the reconciler releases it (the API died
-- mid-reply). Holds a workflow keeps from the start have none.
ALTER TABLE holds ADD COLUMN deadline_at timestamptz;
CREATE INDEX holds_deadline ON holds (deadline_at) WHERE state = 'held' AND deadline_at IS NOT NULL;
