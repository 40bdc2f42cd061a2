-- MCP tasks (protocol revision 2025-11-25). A task-augmented tools/call answers with a task at
-- once; tasks/get and tasks/result follow it on any API instance, after restarts too, so tasks
-- live here and not in a process. A task belongs to the account of the key that made it (another
-- account's task is not found).
--
-- A task is a handle on a generation: its status is derived from the generation's whenever it is
-- read, so nothing has to write it as the generation moves. `status` is set only where the task
-- itself decided: cancelled by tasks/cancel (sticky, as the protocol requires), or a call refused
-- before any generation existed, whose tool result is then stored in `result`.
CREATE TABLE mcp_tasks (
  id                text PRIMARY KEY,
  account_id        text NOT NULL REFERENCES accounts (id),
  generation_id     text REFERENCES generations (id),
  tool              text NOT NULL,
  -- The progressToken of the call that made the task (a JSON string or number), if it sent one.
  progress_token    jsonb,
  ttl_ms            bigint NOT NULL CHECK (ttl_ms > 0),
  poll_interval_ms  integer NOT NULL CHECK (poll_interval_ms > 0),
  status            text CHECK (status IN ('completed', 'failed', 'cancelled')),
  status_message    text,
  result            jsonb,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  expires_at        timestamptz NOT NULL,
  CONSTRAINT mcp_tasks_has_outcome CHECK (generation_id IS NOT NULL OR (status IS NOT NULL AND result IS NOT NULL))
);
-- tasks/list: an account's tasks, newest first (ids are time-ordered).
CREATE INDEX mcp_tasks_account ON mcp_tasks (account_id, id DESC);
