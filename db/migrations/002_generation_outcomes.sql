-- A finished generation always says how it ended: a failure has its error, a success its finish time.
ALTER TABLE generations
  ADD CONSTRAINT generations_failed_has_error CHECK (status <> 'failed' OR error IS NOT NULL),
  ADD CONSTRAINT generations_finished_at CHECK (status NOT IN ('succeeded', 'failed') OR finished_at IS NOT NULL);
