import { parseArgs } from 'node:util';
import { PLANS } from '../core/plans';
import type { Plan } from '../core/plans';
import { MARGIN_GROUPS } from '../core/db/margins';
import type { MarginGroup } from '../core/db/margins';

/** The command line was wrong: print the usage and exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export type Command =
  | { name: 'help' }
  | { name: 'health' }
  | { name: 'account create'; plan: Plan; credits: number; chatCap?: number }
  | { name: 'key create'; accountId: string; scopes: string[]; models?: string[] }
  | { name: 'key revoke'; keyId: string }
  | { name: 'credits add'; accountId: string; credits: number }
  | { name: 'user create'; accountId: string; email: string }
  | { name: 'usage'; groupBy: MarginGroup; from?: string; to?: string };

export interface Invocation {
  command: Command;
  json: boolean;
  url?: string;
  adminToken?: string;
}

const OPTIONS = {
  url: { type: 'string' },
  'admin-token': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  plan: { type: 'string' },
  credits: { type: 'string' },
  'chat-cap': { type: 'string' },
  scopes: { type: 'string' },
  models: { type: 'string' },
  account: { type: 'string' },
  email: { type: 'string' },
  'group-by': { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
} as const;

const GLOBAL_FLAGS = ['url', 'admin-token', 'json', 'help'];

const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
type Values = ReturnType<typeof parse>['values'];

interface Spec {
  positionals: string[];
  flags: (keyof Values)[];
  build(p: string[], v: Values): Command;
}

const SPECS: Record<string, Spec> = {
  health: { positionals: [], flags: [], build: () => ({ name: 'health' }) },
  'account create': {
    positionals: [],
    flags: ['plan', 'credits', 'chat-cap'],
    build: (_, v) => ({
      name: 'account create',
      plan: plan(need(v.plan, 'plan')),
      credits: amount(need(v.credits, 'credits'), 'credits'),
      ...(v['chat-cap'] === undefined ? {} : { chatCap: count(v['chat-cap'], 'chat-cap') }),
    }),
  },
  'key create': {
    positionals: ['account id'],
    flags: ['scopes', 'models'],
    build: ([accountId = ''], v) => ({
      name: 'key create',
      accountId,
      scopes: list(need(v.scopes, 'scopes'), 'scopes'),
      ...(v.models === undefined ? {} : { models: list(v.models, 'models') }),
    }),
  },
  'key revoke': { positionals: ['key id'], flags: [], build: ([keyId = '']) => ({ name: 'key revoke', keyId }) },
  'user create': {
    positionals: [],
    flags: ['account', 'email'],
    build: (_, v) => {
      const email = need(v.email, 'email');
      if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UsageError(`--email must be an email address; got '${email}'`);
      return { name: 'user create', accountId: need(v.account, 'account'), email };
    },
  },
  usage: {
    positionals: [],
    flags: ['group-by', 'from', 'to'],
    build: (_, v) => {
      const groupBy = MARGIN_GROUPS.find((g) => g === (v['group-by'] ?? 'model'));
      if (!groupBy)
        throw new UsageError(`--group-by must be one of ${MARGIN_GROUPS.join(', ')}; got '${v['group-by']}'`);
      return {
        name: 'usage',
        groupBy,
        ...(v.from === undefined ? {} : { from: v.from }),
        ...(v.to === undefined ? {} : { to: v.to }),
      };
    },
  },
  'credits add': {
    positionals: ['account id'],
    flags: ['credits'],
    build: ([accountId = ''], v) => {
      const credits = amount(need(v.credits, 'credits'), 'credits');
      if (credits <= 0) throw new UsageError('--credits must be more than 0');
      return { name: 'credits add', accountId, credits };
    },
  },
};

/** Turns argv (without `node` and the script) into one command; throws UsageError when it cannot. */
export function parseInvocation(argv: readonly string[]): Invocation {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse([...argv]);
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]);
  }
  const { values, positionals } = parsed;
  const base = { json: values.json ?? false, url: values.url, adminToken: values['admin-token'] };
  const [first, second] = positionals;
  if (values.help || first === undefined || first === 'help') return { ...base, command: { name: 'help' } };

  const words = SPECS[first] ? 1 : 2;
  const name = positionals.slice(0, words).join(' ');
  const spec = SPECS[name];
  if (!spec) throw new UsageError(`unknown command '${second === undefined ? first : name}'`);

  const rest = positionals.slice(words);
  const missing = spec.positionals[rest.length];
  if (missing) throw new UsageError(`'${name}' needs the ${missing}`);
  const extra = rest[spec.positionals.length];
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}' for '${name}'`);
  for (const flag of Object.keys(values)) {
    if (!GLOBAL_FLAGS.includes(flag) && !(spec.flags as string[]).includes(flag))
      throw new UsageError(`--${flag} does not apply to '${name}'`);
  }
  return { ...base, command: spec.build(rest, values) };
}

function need(value: string | undefined, flag: string): string {
  if (value === undefined) throw new UsageError(`--${flag} is required`);
  return value;
}

function plan(value: string): Plan {
  const found = PLANS.find((p) => p === value);
  if (!found) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}; got '${value}'`);
  return found;
}

function amount(value: string, flag: string): number {
  if (!/^\d+(\.\d+)?$/.test(value))
    throw new UsageError(`--${flag} must be a number of credits, e.g. 500; got '${value}'`);
  return Number(value);
}

function count(value: string, flag: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag} must be a whole number; got '${value}'`);
  return Number(value);
}

function list(value: string, flag: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (items.length === 0) throw new UsageError(`--${flag} needs a comma-separated list, e.g. image,video,chat`);
  return items;
}
