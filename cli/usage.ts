/** The text of `gensvc help`: every command with an example (DESIGN §8's admin API, one to one). */
export const USAGE = `gensvc: operate the generation service over its admin API

Usage: gensvc <command> [options]

Commands:
  account create --plan <free|ronin|shinobi|samurai> --credits <n> [--chat-cap <n>]
      Open an account; prints its id.
      e.g. gensvc account create --plan samurai --credits 500

  key create <account id> --scopes <image,video,chat,upscale,webhooks> [--models <flux,kling,...>]
      Issue an API key; prints the key (shown once only) and its id. 'webhooks' lets it manage
      the account’s webhook endpoints.
      e.g. gensvc key create acct_01j... --scopes image,video,chat

  key revoke <key id>
      Revoke a key; requests made with it are refused from then on.
      e.g. gensvc key revoke key_01j...

  credits add <account id> --credits <n>
      Top up an account; prints the new available balance.
      e.g. gensvc credits add acct_01j... --credits 250

  user create --account <account id> --email <email>
      Create a dashboard user of the account; prints a one-time link to set the password
      (valid 24 h, works once). Run it again for the same email to get a new link.
      e.g. gensvc user create --account acct_01j... --email ada@example.com

  usage [--group-by <model|upstream|day>] [--from <date>] [--to <date>]
      Revenue (the ledger's charges), upstream cost and margin in EUR (1 credit = 0.01 EUR), by
      model (default), upstream or UTC day, for generations created from --from (default 30 days
      ago) until --to (default now). Costs come from costEur in UPSTREAMS_JSON.
      e.g. gensvc usage --group-by upstream --from 2026-11-01

  health
      Check that the API, PostgreSQL and Temporal answer.
      e.g. gensvc health

  help
      Show this text (also --help, -h, or no arguments).

Options for every command:
  --url <url>             the service (env GENSVC_URL; default http://127.0.0.1:3000)
  --admin-token <token>   the admin token (env ADMIN_TOKEN; npm start prints it)
  --json                  print the API's JSON answer instead of text
`;
