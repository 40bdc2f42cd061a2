-- A generation its client deleted (OpenAI's DELETE /v1/videos/{id}): its files are gone and no
-- read shows it again, but the row stays, because the ledger's entries for what it was charged
-- point at it.
ALTER TABLE generations ADD COLUMN deleted_at timestamptz;
