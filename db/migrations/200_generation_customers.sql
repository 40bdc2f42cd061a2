-- The platform's own end user a generation was made for: the id the platform gives it (OpenAI's
-- `user` or `safety_identifier`, a `customer` field, or the X-Customer-Id header), stored as sent
-- and shown back to the account. Ids are the account's own: two accounts' "u_1" are two customers.
ALTER TABLE generations ADD COLUMN customer_id text CHECK (char_length(customer_id) BETWEEN 1 AND 256);

-- A customer's budget sums its generations since its period started; its list pages by id. Only
-- rows with a customer are in either index.
CREATE INDEX generations_customer_created ON generations (account_id, customer_id, created_at) WHERE customer_id IS NOT NULL;
CREATE INDEX generations_customer_id ON generations (account_id, customer_id, id) WHERE customer_id IS NOT NULL;
