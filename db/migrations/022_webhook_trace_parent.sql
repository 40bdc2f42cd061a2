-- The W3C traceparent of the span that wrote a delivery (tracing on; NULL when off), so that its
-- attempts, a trace of their own, link to the work that caused them (docs/decisions/0057-tracing.md).
-- Nullable without a default: adding it rewrites nothing, and an outbox insert stays one statement.
ALTER TABLE webhook_deliveries ADD COLUMN trace_parent text;
