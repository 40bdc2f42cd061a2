import type { Invocation } from './args';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** The environment the CLI reads, once, at its entry point. */
export interface CliEnv {
  GENSVC_URL?: string;
  ADMIN_TOKEN?: string;
}

/** The configuration is missing or malformed: say which setting, exit 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export interface Target {
  url: string;
  adminToken?: string;
}

/** Flags win over the environment; admin commands need a token. */
export function resolveTarget(inv: Invocation, env: CliEnv): Target {
  const url = (inv.url ?? env.GENSVC_URL ?? DEFAULT_URL).trim();
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`the service URL '${url}' (GENSVC_URL or --url) is not a URL; e.g. ${DEFAULT_URL}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`the service URL '${url}' (GENSVC_URL or --url) must start with http:// or https://`);
  }
  const adminToken = inv.adminToken ?? (env.ADMIN_TOKEN || undefined);
  if (inv.command.name !== 'health' && !adminToken) {
    throw new ConfigError(
      'ADMIN_TOKEN is not set: export ADMIN_TOKEN=<token> (npm start prints it) or pass --admin-token <token>',
    );
  }
  return { url: url.replace(/\/+$/, ''), ...(adminToken ? { adminToken } : {}) };
}
