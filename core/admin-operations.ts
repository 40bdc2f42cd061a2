import type pg from 'pg';
import { z } from 'zod';
import { accountExists, insertAccount, insertApiKey, revokeApiKey, PLANS } from './db/accounts';
import { creditAccount } from './db/ledger';
import { inTransaction } from './db/pool';
import { generateApiKey, hashApiKey, normaliseScope } from './api-keys';
import { findChatModel, findImageModel, findOpenAiChatModel, findOpenAiVideoModel, findUpscaleModel, findVideoModel, AUTO_CHAT_ID } from './catalogue';
import { InvalidRequestError, NotFoundError } from './errors';
import { newId } from './ids';
import { creditsToMc, mcToCredits } from './money';

/** What an operator does: open accounts, issue and revoke keys, add credits. */

const credits = z.number().finite().min(0).max(1e12);

export const createAccountBody = z.object({
  plan: z.enum(PLANS).describe('Rate limit per key: free 20, ronin 60, shinobi 200, samurai 600 requests a minute'),
  credits,
  chatCap: z.number().int().min(0).max(1_000_000).optional().describe('Free chat replies (default FREE_CHAT_CAP)'),
}).meta({ examples: [{ plan: 'samurai', credits: 500 }, { plan: 'free', credits: 10, chatCap: 5 }] });

export const createKeyBody = z.object({
  scopes: z.array(z.string().max(40)).min(1, 'at least one scope is required')
    .describe('Capabilities: image, video, chat, upscale (or generate:image, generate:video, generate:chat, generate:upscale)'),
  models: z.array(z.string().min(1).max(100)).min(1).optional().describe('An allow-list of model ids; omitted: every model'),
}).meta({ examples: [{ scopes: ['image', 'video', 'chat', 'upscale'] }, { scopes: ['generate:image'], models: ['flux'] }] });

export const topUpBody = z.object({ credits: credits.refine((c) => creditsToMc(c) > 0, 'credits must be at least 0.001') }).meta({ examples: [{ credits: 250 }] });

export async function createAccount(pool: pg.Pool, body: z.infer<typeof createAccountBody>, defaultChatCap: number) {
  const id = newId('acct');
  await inTransaction(pool, (tx) => insertAccount(tx, { id, plan: body.plan, creditsMc: creditsToMc(body.credits), chatCap: body.chatCap ?? defaultChatCap }));
  return { id };
}

export async function createKey(pool: pg.Pool, accountId: string, body: z.infer<typeof createKeyBody>) {
  const scopes = body.scopes.map((s) => {
    const scope = normaliseScope(s);
    if (!scope) throw new InvalidRequestError(`unknown scope '${s}'; use image, video, chat or upscale (or generate:<kind>)`, 'scopes');
    return scope;
  });
  for (const m of body.models ?? []) {
    if (m !== AUTO_CHAT_ID && !findImageModel(m) && !findVideoModel(m) && !findOpenAiVideoModel(m) && !findChatModel(m) && !findOpenAiChatModel(m) && !findUpscaleModel(m)) {
      throw new InvalidRequestError(`unknown model '${m}'`, 'models');
    }
  }
  if (!(await accountExists(pool, accountId))) throw new NotFoundError(`Account '${accountId}' not found.`);
  const key = generateApiKey();
  const id = newId('key');
  await insertApiKey(pool, { id, accountId, keyHash: hashApiKey(key), keyHint: `${key.slice(0, 8)}…${key.slice(-4)}`, scopes: [...new Set(scopes)], models: body.models ?? null });
  return { id, key };
}

export async function topUp(pool: pg.Pool, accountId: string, body: z.infer<typeof topUpBody>) {
  const after = await inTransaction(pool, (tx) => creditAccount(tx, accountId, creditsToMc(body.credits), 'top-up'));
  if (!after) throw new NotFoundError(`Account '${accountId}' not found.`);
  return { id: accountId, balance: mcToCredits(after.balance_mc - after.held_mc) };
}

export async function revokeKey(pool: pg.Pool, keyId: string) {
  if (!(await revokeApiKey(pool, keyId))) throw new NotFoundError(`Key '${keyId}' not found.`);
  return { id: keyId, revoked: true as const };
}
