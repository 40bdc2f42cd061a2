-- An endpoint may ask for OpenAI's events and shape (core/webhooks/events.ts), beside the two
-- catalogues of the spec.
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_format_check;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_format_check
  CHECK (format IN ('nested', 'flat', 'openai'));
