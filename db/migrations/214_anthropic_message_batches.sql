-- Anthropic's Message Batches run on the same batches and lines as OpenAI's Batch API. Their
-- requests come inline (no uploaded file), so a batch may have no input file; the endpoint its
-- lines call ('/v1/messages') names its format. A Message Batch can be deleted once it has ended:
-- it is then gone for every door, while its lines' generations and ledger entries stay.
ALTER TABLE batches ALTER COLUMN input_file_id DROP NOT NULL;
ALTER TABLE batches ADD CONSTRAINT batches_input_file
  CHECK (input_file_id IS NOT NULL OR endpoint = '/v1/messages');
ALTER TABLE batches ADD COLUMN deleted_at timestamptz;
