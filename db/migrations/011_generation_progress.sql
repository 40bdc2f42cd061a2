-- How far a running generation is, written by the provider step, never by the ledger:
-- kept apart from the generation row like its previews (010), so a progress write never touches
-- (or waits on) the row the ledger settles. Monotone: a write only ever raises `percent`.
CREATE TABLE generation_progress (
  generation_id  text PRIMARY KEY REFERENCES generations (id),
  percent        smallint NOT NULL CHECK (percent BETWEEN 0 AND 99),
  -- 'provider': the provider's own progress; 'elapsed': estimated from time against the expected duration.
  source         text NOT NULL CHECK (source IN ('provider', 'elapsed')),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

-- How long runs of a model and size took, as the service measured them (running to output stored):
-- the latest samples, newest last, whose median is the expected duration of the next one.
CREATE TABLE generation_durations (
  model       text NOT NULL,
  size        text NOT NULL,
  samples     real[] NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model, size)
);
