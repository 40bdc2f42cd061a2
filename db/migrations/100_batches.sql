-- Batches (OpenAI's Batch API): files uploaded for them, the batches and their lines.
--
-- Money: a batch's whole quote is held in one movement when it is created (`held_mc`, one `hold`
-- ledger entry naming the batch). A line that starts takes its share out of that hold into a hold
-- of its own generation(s), without moving the account (its `held_mc` already counts it); from
-- there it settles or releases like any generation. A batch that stops releases what is left.
-- So at every moment: accounts.held_mc = Σ holds held + Σ batches.held_mc.

CREATE TABLE files (
  id           text PRIMARY KEY,
  account_id   text NOT NULL REFERENCES accounts (id),
  purpose      text NOT NULL CHECK (purpose IN ('batch', 'batch_output')),
  filename     text NOT NULL,
  -- An output or error file is measured when first read (it is rendered from its batch's lines).
  bytes        bigint CHECK (bytes >= 0),
  -- Where an uploaded file's bytes are stored; NULL for an output or error file.
  storage_key  text,
  lines        integer,
  -- `input`: uploaded; `output`, `errors`: a batch's results, rendered from its lines when read.
  role         text NOT NULL DEFAULT 'input' CHECK (role IN ('input', 'output', 'errors')),
  batch_id     text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  deleted_at   timestamptz
);
CREATE INDEX files_account ON files (account_id, id DESC) WHERE deleted_at IS NULL;

CREATE TABLE batches (
  id                 text PRIMARY KEY,
  account_id         text NOT NULL REFERENCES accounts (id),
  api_key_id         text REFERENCES api_keys (id),
  endpoint           text NOT NULL,
  kind               text NOT NULL CHECK (kind IN ('image', 'video', 'chat', 'upscale')),
  input_file_id      text NOT NULL REFERENCES files (id),
  completion_window  text NOT NULL,
  metadata           jsonb,
  status             text NOT NULL CHECK (status IN ('validating', 'failed', 'in_progress', 'finalizing', 'completed',
                                                     'expired', 'cancelling', 'cancelled')),
  -- How a batch that was told to stop will end ('cancelled' or 'expired'); NULL while it runs to its end.
  stopping           text CHECK (stopping IN ('cancelled', 'expired')),
  -- Validation errors: [{ code, message, param, line }].
  errors             jsonb,
  total              integer NOT NULL CHECK (total >= 0),
  quote_mc           bigint NOT NULL DEFAULT 0 CHECK (quote_mc >= 0),
  -- The part of the batch's hold no line has taken yet.
  held_mc            bigint NOT NULL DEFAULT 0 CHECK (held_mc >= 0 AND held_mc <= quote_mc),
  output_file_id     text REFERENCES files (id),
  error_file_id      text REFERENCES files (id),
  created_at         timestamptz NOT NULL DEFAULT now(),
  in_progress_at     timestamptz,
  expires_at         timestamptz,
  finalizing_at      timestamptz,
  completed_at       timestamptz,
  failed_at          timestamptz,
  expired_at         timestamptz,
  cancelling_at      timestamptz,
  cancelled_at       timestamptz,
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_account ON batches (account_id, id DESC);
-- What the reconciler looks at: batches still running.
CREATE INDEX batches_live ON batches (id) WHERE status IN ('in_progress', 'cancelling');

CREATE TABLE batch_lines (
  batch_id        text NOT NULL REFERENCES batches (id),
  -- The line of the input file (the first is 1).
  line            integer NOT NULL CHECK (line >= 1),
  custom_id       text NOT NULL,
  -- What the line runs: its priced generations (core/batches/lines.ts).
  request         jsonb NOT NULL,
  quote_mc        bigint NOT NULL CHECK (quote_mc >= 0),
  -- The step of the batch workflow that started it (NULL while it waits), and the generations it became.
  claim           text,
  generation_ids  text[],
  -- A line that never ran because its batch stopped first.
  outcome         text CHECK (outcome IN ('cancelled', 'expired')),
  PRIMARY KEY (batch_id, line),
  CONSTRAINT batch_lines_custom_id UNIQUE (batch_id, custom_id),
  CONSTRAINT batch_lines_once CHECK (claim IS NULL OR outcome IS NULL)
);
CREATE INDEX batch_lines_waiting ON batch_lines (batch_id, line) WHERE claim IS NULL AND outcome IS NULL;
CREATE INDEX batch_lines_claim ON batch_lines (batch_id, claim) WHERE claim IS NOT NULL;

-- A generation that runs a batch's line carries the batch and the line.
ALTER TABLE generations ADD COLUMN batch_id text REFERENCES batches (id);
ALTER TABLE generations ADD COLUMN batch_line integer;
CREATE INDEX generations_batch ON generations (batch_id, batch_line) WHERE batch_id IS NOT NULL;
-- What bounds the lines in flight, per batch and per account: small, read under the claim's lock.
CREATE INDEX generations_batch_live ON generations (batch_id)
  WHERE batch_id IS NOT NULL AND status IN ('queued', 'running');
CREATE INDEX generations_account_batch_live ON generations (account_id)
  WHERE batch_id IS NOT NULL AND status IN ('queued', 'running');

-- The batch's own movements (its hold, what it released) name it; a line's charge names its generation.
ALTER TABLE ledger_entries ADD COLUMN batch_id text REFERENCES batches (id);
CREATE INDEX ledger_entries_batch ON ledger_entries (batch_id) WHERE batch_id IS NOT NULL;

-- batch.completed, batch.failed, batch.cancelled, batch.expired: one delivery per endpoint per batch and event.
ALTER TABLE webhook_deliveries ADD COLUMN batch_id text REFERENCES batches (id);
CREATE UNIQUE INDEX webhook_deliveries_batch_once ON webhook_deliveries (endpoint_id, batch_id, event)
  WHERE batch_id IS NOT NULL;
