import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { getAccountCredits } from '../../core/db/accounts';
import { listGenerations } from '../../core/db/generations';
import { NotFoundError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import { mcToCredits } from '../../core/money';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import { isFinal } from '../../core/vocabulary';
import type { Door, VideoPreviewName } from '../../core/vocabulary';
import { decodeCursor, encodeCursor } from '../../core/cursor';
import { readOwn } from '../../core/generation/lookup';
import { priceRequest } from './requests';
import type { Serves } from './requests';
import type { GenerationRequest } from './requests';
import type { GenerationGateway } from './temporal-gateway';
import type { Balance, FollowOptions, ListQuery, Quote } from './types';

/** How often `follow` re-reads a record while a caller watches its status. */
const FOLLOW_POLL_MS = 250;

const CONTENT_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
  webm: 'video/webm',
  mp4: 'video/mp4',
  txt: 'text/plain; charset=utf-8',
};

function contentTypeOf(key: string): string {
  return CONTENT_TYPES[key.slice(key.lastIndexOf('.') + 1)] ?? 'application/octet-stream';
}

interface ReadDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  serves: Serves;
}

/** Reading and following an account's generations, its balance and what a request would cost. */
export function createReads(deps: ReadDeps) {
  const { pool, store } = deps;
  return {
    async get(principal: Principal, id: string): Promise<GenerationView> {
      return viewOf(await readOwn(pool, principal.accountId, id), store);
    },

    follow: (principal: Principal, id: string, opts: FollowOptions): Promise<GenerationView> =>
      follow(deps, principal, id, opts),

    /**
     * A generation with its output file's bytes (once it has succeeded), or those of one of a
     * video's previews, for doors that serve the file itself. No file: not succeeded, or no such preview.
     */
    async output(
      principal: Principal,
      id: string,
      preview?: VideoPreviewName,
    ): Promise<{ generation: GenerationView; file?: { data: Buffer; contentType: string } }> {
      const g = await readOwn(pool, principal.accountId, id);
      const generation = await viewOf(g, store);
      const key = preview === undefined ? g.outputKey : g.previewKeys[preview];
      if (g.status !== 'succeeded' || !key) return { generation };
      const data = await store.get(key);
      return data ? { generation, file: { data, contentType: contentTypeOf(key) } } : { generation };
    },

    async list(principal: Principal, q: ListQuery): Promise<{ data: GenerationView[]; nextCursor: string | null }> {
      const before = q.cursor === undefined ? q.after : decodeCursor(q.cursor);
      const rows = await listGenerations(pool, principal.accountId, {
        limit: q.limit + 1,
        before,
        kind: q.kind,
        status: q.status,
        customerId: q.customer,
        order: q.order,
      });
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return {
        data: await Promise.all(page.map((g) => viewOf(g, store))),
        nextCursor: rows.length > q.limit && last ? encodeCursor(last.id) : null,
      };
    },

    async balance(principal: Principal): Promise<Balance> {
      const c = await credits(pool, principal);
      return {
        // What can be spent now: the ledger balance less active holds (DESIGN §4).
        balance: mcToCredits(c.balanceMc - c.heldMc),
        holdsActive: mcToCredits(c.heldMc),
        plan: c.plan,
        trial: { chatCap: c.chatCap, chatUsed: c.chatUsed, chatLeft: Math.max(0, c.chatCap - c.chatUsed) },
      };
    },

    quote: (request: GenerationRequest, principal: Principal, door: Door): Promise<Quote> =>
      quote(deps, request, principal, door),
  };
}

async function credits(pool: pg.Pool, principal: Principal) {
  const c = await getAccountCredits(pool, principal.accountId);
  if (!c) throw new NotFoundError('Account not found.');
  return c;
}

/**
 * Waits for a generation to finish, up to `waitMs`, and answers it as it then is. The end is
 * pushed by Temporal (the workflow's result), so a plain wait costs no polling. The record is
 * also read every FOLLOW_POLL_MS while a caller watches the status (`onStatus`, e.g. to send
 * progress as it starts running), and once Temporal has nothing to say (a workflow it does not
 * know, such as one whose start was lost) until the deadline.
 */
async function follow(
  { pool, gateway, store }: ReadDeps,
  principal: Principal,
  id: string,
  opts: FollowOptions,
): Promise<GenerationView> {
  let g = await readOwn(pool, principal.accountId, id);
  let seen = g.status;
  await opts.onStatus?.(await viewOf(g, store));
  if (isFinal(g.status)) return viewOf(g, store);
  const watch = new AbortController();
  const forward = () => watch.abort();
  opts.signal?.addEventListener('abort', forward, { once: true });
  let pushed = false;
  const finished = gateway.awaitFinish(id, opts.waitMs, watch.signal).finally(() => {
    pushed = true;
  });
  const deadline = Date.now() + opts.waitMs;
  const tick = () => delay(Math.max(0, Math.min(FOLLOW_POLL_MS, deadline - Date.now())));
  try {
    while (!isFinal(g.status) && Date.now() < deadline && !watch.signal.aborted) {
      if (pushed) await tick();
      else await (opts.onStatus ? Promise.race([finished, tick()]) : finished);
      g = await readOwn(pool, principal.accountId, id);
      if (g.status !== seen) {
        seen = g.status;
        await opts.onStatus?.(await viewOf(g, store));
      }
    }
    return await viewOf(g, store);
  } finally {
    watch.abort();
    opts.signal?.removeEventListener('abort', forward);
    await finished;
  }
}

/**
 * Prices a request without admitting it: the same `priceRequest` as submit (scope, safety
 * guard, price, model allow-list), then the balance and the free allowance as they are now.
 * Nothing is held, claimed or recorded; an upscale's input is not fetched.
 */
async function quote(
  { pool, serves }: ReadDeps,
  request: GenerationRequest,
  principal: Principal,
  door: Door,
): Promise<Quote> {
  const priced = priceRequest(request, principal, door, serves);
  const c = await credits(pool, principal);
  const free = priced.freeChat !== undefined && c.chatUsed < c.chatCap;
  const credited = free ? 0 : mcToCredits(priced.quoteMc);
  const balance = mcToCredits(c.balanceMc - c.heldMc);
  const { imageUrl: _imageUrl, ...params } = priced.params;
  return {
    kind: priced.kind,
    model: free ? priced.freeChat!.model : priced.model,
    credits: credited,
    free,
    params,
    balance,
    affordable: free || balance >= credited,
  };
}
