-- A generation's parameters in two columns: `params` is what the client asked for and every door
-- may show; `internal` is what the service keeps for itself (deadlines, rates, conversations, tools,
-- response state, stored input keys, the siblings of one request's n images). Existing rows have
-- their internal keys moved out of `params` (core/generation/params.ts lists both sets).
ALTER TABLE generations ADD COLUMN internal jsonb NOT NULL DEFAULT '{}'::jsonb;

UPDATE generations SET
  internal = (
    SELECT COALESCE(jsonb_object_agg(key, value), '{}'::jsonb)
      FROM jsonb_each(jsonb_build_object(
        'clientDeadlineMs', params->'clientDeadlineMs',
        'apiRunDeadlineMs', params->'apiRunDeadlineMs',
        'ratePer1kMc', params->'ratePer1kMc',
        'sampling', params->'sampling',
        'tools', params->'tools',
        'messages', params->'messages',
        'response', params->'response',
        'outputToolCalls', params->'outputToolCalls',
        'inputKey', params->'inputKey',
        'siblings', CASE WHEN params ? 'batch' THEN jsonb_build_object('firstId', params->'batch', 'index', params->'batchIndex') END
      )) AS e (key, value)
     WHERE value IS NOT NULL AND value <> 'null'::jsonb
  ),
  params = params - ARRAY['clientDeadlineMs', 'apiRunDeadlineMs', 'ratePer1kMc', 'sampling', 'tools', 'messages', 'response',
                          'outputToolCalls', 'inputKey', 'batch', 'batchIndex']
WHERE params ?| ARRAY['clientDeadlineMs', 'apiRunDeadlineMs', 'ratePer1kMc', 'sampling', 'tools', 'messages', 'response',
                      'outputToolCalls', 'inputKey', 'batch', 'batchIndex'];

-- Group B's `n` images: an Idempotency-Key repeat finds the request's generations by its first one.
DROP INDEX generations_batch;
CREATE INDEX generations_siblings ON generations (account_id, (internal->'siblings'->>'firstId')) WHERE internal ? 'siblings';
