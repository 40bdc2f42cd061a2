-- Managing webhook endpoints becomes a scope of its own (`webhooks`): an endpoint receives signed
-- output URLs of every generation of the account, more than a chat-only key should reach. Every
-- existing key could manage them until now, so each keeps that right; new keys ask for it.
UPDATE api_keys SET scopes = array_append(scopes, 'webhooks') WHERE NOT ('webhooks' = ANY (scopes));
