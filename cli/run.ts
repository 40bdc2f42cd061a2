import { ApiError, ConnectionError, createAdminClient } from './admin-client';
import type { AdminClient, Fetch } from './admin-client';
import { parseInvocation, UsageError } from './args';
import type { Command } from './args';
import { ConfigError, resolveTarget } from './config';
import type { CliEnv } from './config';
import {
  formatAccountCreated,
  formatCreditsAdded,
  formatHealth,
  formatJson,
  formatKeyCreated,
  formatKeyRevoked,
  formatUsage,
  formatUserCreated,
} from './output';
import { USAGE } from './usage';

export interface Io {
  fetch: Fetch;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** One CLI invocation; returns the exit code (0 done, 1 the service said no or is unreachable, 2 usage). */
export async function run(argv: readonly string[], env: CliEnv, io: Io): Promise<number> {
  try {
    const inv = parseInvocation(argv);
    if (inv.command.name === 'help') {
      io.stdout(USAGE);
      return 0;
    }
    const target = resolveTarget(inv, env);
    const client = createAdminClient({
      baseUrl: target.url,
      fetch: io.fetch,
      ...(target.adminToken ? { adminToken: target.adminToken } : {}),
    });
    const result = await execute(inv.command, client);
    io.stdout(`${inv.json ? formatJson(result.body) : result.text}\n`);
    return result.ok ? 0 : 1;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof ConfigError) {
      io.stderr(`error: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ApiError) {
      io.stderr(`error: ${err.type}: ${err.message}\n`);
      return 1;
    }
    if (err instanceof ConnectionError) {
      io.stderr(
        `error: ${err.message}\nhint: the service may not be running at ${err.url}; start it with \`npm start\`, or point GENSVC_URL / --url at it.\n`,
      );
      return 1;
    }
    throw err;
  }
}

async function execute(
  cmd: Exclude<Command, { name: 'help' }>,
  client: AdminClient,
): Promise<{ body: unknown; text: string; ok: boolean }> {
  switch (cmd.name) {
    case 'health': {
      const body = await client.health();
      return { body, text: formatHealth(body), ok: body.status === 'ok' };
    }
    case 'account create': {
      const body = await client.createAccount({
        plan: cmd.plan,
        credits: cmd.credits,
        ...(cmd.chatCap === undefined ? {} : { chatCap: cmd.chatCap }),
      });
      return { body, text: formatAccountCreated(body), ok: true };
    }
    case 'key create': {
      const body = await client.createKey(cmd.accountId, {
        scopes: cmd.scopes,
        ...(cmd.models ? { models: cmd.models } : {}),
      });
      return { body, text: formatKeyCreated(body), ok: true };
    }
    case 'credits add': {
      const body = await client.addCredits(cmd.accountId, cmd.credits);
      return { body, text: formatCreditsAdded(body), ok: true };
    }
    case 'user create': {
      const body = await client.createUser({ accountId: cmd.accountId, email: cmd.email });
      return { body, text: formatUserCreated(body), ok: true };
    }
    case 'usage': {
      const body = await client.usage({
        groupBy: cmd.groupBy,
        ...(cmd.from ? { from: cmd.from } : {}),
        ...(cmd.to ? { to: cmd.to } : {}),
      });
      return { body, text: formatUsage(body), ok: true };
    }
    case 'key revoke': {
      const body = await client.revokeKey(cmd.keyId);
      return { body, text: formatKeyRevoked(body), ok: true };
    }
  }
}
