-- Callbacks from upstreams (a queued video's end) and the webhooks the service sends are two
-- features: they no longer share a word.
ALTER TABLE provider_webhook_receipts RENAME TO upstream_callback_receipts;
