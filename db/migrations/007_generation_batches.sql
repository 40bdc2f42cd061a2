-- Group B's `n` images are n generations admitted together; an Idempotency-Key repeat finds the
-- batch by the id of its first generation (params.batch).
CREATE INDEX generations_batch ON generations (account_id, (params->>'batch')) WHERE params ? 'batch';
