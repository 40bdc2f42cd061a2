-- A chat's tokens in detail, as its provider counted them (TokenUsage in core/vocabulary.ts):
-- the input with its cache reads and writes, the output with its reasoning. Written with the
-- charge, beside the output tokens charged for (params.outputTokens); null for other kinds, and
-- for a chat whose settle did not carry it (its record then shows the estimate).
ALTER TABLE generations ADD COLUMN token_usage jsonb;
