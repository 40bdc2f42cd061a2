-- The still previews of a video (thumbnail, spritesheet), stored beside its output by the provider
-- step. Kept apart from the generation row: they are files about the output, not its outcome, so
-- writing them never touches the row the ledger settles.
CREATE TABLE generation_previews (
  generation_id  text NOT NULL REFERENCES generations (id),
  name           text NOT NULL CHECK (name IN ('thumbnail', 'spritesheet')),
  storage_key    text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (generation_id, name)
);
