-- Several upstreams per model. Which upstreams a generation's run asked and which one
-- served it, with what it cost us: written by the provider step, never by the ledger, kept apart
-- from the generation row like its progress (011), so routing never touches the row the ledger settles.
CREATE TABLE generation_upstreams (
  generation_id  text PRIMARY KEY REFERENCES generations (id),
  -- Every upstream asked, in order, across the run's attempts (a name may repeat).
  tried          text[] NOT NULL DEFAULT '{}',
  served_by      text,
  -- What the serving upstream costs us for this run, in EUR (null: no cost configured).
  cost_eur       numeric(14, 6),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX generation_upstreams_served_by ON generation_upstreams (served_by);

-- The circuit breaker of each upstream, shared by every API and worker process: `failures` in a
-- row on the upstream's side; while `cooled_until` is ahead it is skipped, once past it one caller
-- claims the probe by moving it on (so a cooled upstream is asked by one request, not all at once).
CREATE TABLE upstream_health (
  upstream      text PRIMARY KEY,
  failures      integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
  cooled_until  timestamptz,
  updated_at    timestamptz NOT NULL DEFAULT now()
);
