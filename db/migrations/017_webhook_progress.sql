-- Progress webhooks: an endpoint that asks for `generation.progress` gets one delivery
-- per 10 % step a run crosses. A delivery remembers its step, and "one per state change per
-- endpoint" becomes one per (event, step): several progress deliveries of one generation, never
-- two of one step, whoever records it twice.
ALTER TABLE webhook_deliveries ADD COLUMN progress smallint CHECK (progress BETWEEN 0 AND 100);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_once;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, generation_id, event, coalesce(progress, -1));
