// What the fault run asks of the service: a fixed, reproducible mix of every kind through groups A
// and C, chats through group B too (the API runs those itself, its workflow started at the end),
// some that the simulator fails, some keyed, some on an account that runs out of credits
// (and is topped up), some through a key with a spending budget, some images of a model routed to
// two upstreams of which the first fails half its submits.
// Every prompt carries the request's number (`[faults #N]`), so that the checks can find in the
// database every generation a request made, however many times it was sent.
import { findOpenAiChatModel } from '../core/catalogue/models';
import type { InputImage } from './inputs';

export type Kind = 'image' | 'video' | 'chat' | 'upscale';
export type Door = 'A' | 'B' | 'C';

export interface PlannedRequest {
  index: number;
  /** Index into the run's accounts; the last one is the account meant to run out of credits. */
  account: number;
  door: Door;
  kind: Kind;
  /** Sent with the account's budgeted key (account 1 only): refused with 402 budget_exceeded once it is spent. */
  budgeted: boolean;
  /** Made for CAPPED_CUSTOMER (account CUSTOMER_ACCOUNT only): refused with 402 customer_budget_exceeded once its budget is spent. */
  customer: string | undefined;
  /** An image of UPSTREAM_MODEL: served by the half-failing upstream or, when that fails, the steady one. */
  upstream: boolean;
  /** `sim:fail` in the prompt: the provider refuses the run, the hold must be released. */
  simFail: boolean;
  /** Sent with an Idempotency-Key and retried on a 5xx or a dropped connection. */
  idempotencyKey: string | undefined;
  /**
   * Keyed requests only: the network loses the first answer after this long (the client stops
   * waiting), so the retry meets its first attempt still in flight or already admitted.
   */
  loseFirstAnswerAfterMs?: number;
  path: '/api/v1/generate' | '/api/generate' | '/v1/chat/completions';
  body: Record<string, unknown>;
  /** Group B chats: the model's price per 1,000 output tokens (what the reply's usage is charged at). */
  perTokenMc?: number;
  /** Upscales: the input and the factor, to check the output's size. */
  upscale?: { input: InputImage; scale: 2 | 4 };
}

export const TOKEN_PATTERN = /\[faults #(\d+)\]/;

/** Accounts: the rich ones never run out; the last one has a little, gets every 21st request and is topped up during the run. */
export const ACCOUNTS = [
  { credits: 1_000_000, chatCap: 25 },
  { credits: 1_000_000, chatCap: 25 },
  { credits: 1_000_000, chatCap: 25 },
  { credits: 120, chatCap: 5 },
] as const;
export const POOR = ACCOUNTS.length - 1;
/** The account with a second, budgeted key (faults/accounts.ts sets the budget). */
export const BUDGETED = 1;
/** The account one of whose customers (the platform's own end user) has a budget (faults/accounts.ts sets it). */
export const CUSTOMER_ACCOUNT = 2;
export const CAPPED_CUSTOMER = 'faults-capped-user';
/** The group B chat model: billed per output token, run by the API itself. */
export const GROUP_B_CHAT_MODEL = 'claude-haiku';
/** The catalogue image model the run routes to two upstreams (faults/upstreams.ts). */
export const UPSTREAM_MODEL = 'image-qwen';
/** In the prompt of those images, so that the checks find them. */
export const UPSTREAM_PROMPT = 'image from an upstream';

/** Kind by position in a cycle of 20: 7 images, 5 chats, 4 videos, 4 upscales. */
const KIND_CYCLE: Kind[] = [
  'image',
  'chat',
  'video',
  'image',
  'upscale',
  'chat',
  'image',
  'video',
  'upscale',
  'image',
  'chat',
  'image',
  'video',
  'upscale',
  'chat',
  'image',
  'video',
  'upscale',
  'chat',
  'image',
];

/** A small deterministic hash, so a run's mix is the same every time. */
function mix(n: number, salt: number): number {
  let x = (n + 1) * 2654435761 + salt * 40503;
  x = Math.imul(x ^ (x >>> 15), 2246822507);
  x = Math.imul(x ^ (x >>> 13), 3266489909);
  return ((x ^ (x >>> 16)) >>> 0) / 4294967296;
}

export function planRequests(count: number, inputs: InputImage[], runId: string): PlannedRequest[] {
  return Array.from({ length: count }, (_, index) => {
    const kind = KIND_CYCLE[index % KIND_CYCLE.length]!;
    // 21 against the kind cycle's 20, so that the poor account gets every kind in turn.
    const account = index % 21 === 13 ? POOR : index % POOR;
    // Two chats in five go through group B: the API streams (or gathers) the reply itself.
    const door: Door = kind === 'chat' && mix(index, 11) < 0.4 ? 'B' : mix(index, 1) < 0.5 ? 'A' : 'C';
    // Group A images only: group C names its models its own way.
    const upstream = kind === 'image' && door === 'A' && mix(index, 9) < 0.4;
    // Group B answers a provider's failure as an HTTP error before the first token: not asked for here.
    const simFail = !upstream && door !== 'B' && mix(index, 2) < 0.1;
    const budgeted = account === BUDGETED && mix(index, 10) < 0.15;
    const customer = account === CUSTOMER_ACCOUNT && mix(index, 13) < 0.3 ? CAPPED_CUSTOMER : undefined;
    // Group B chats are sent once: a repeat of a reply still running would answer it as it stands.
    const keyed = door !== 'B' && mix(index, 3) < 0.5;
    // Some runs take seconds, so that kills and restarts find work in flight at every step.
    const slow = mix(index, 4) < 0.3;
    const delayMs = {
      image: slow ? 2_500 : 0,
      chat: slow ? 1_500 : 0,
      video: 2_000 + Math.round(mix(index, 5) * 6_000),
      upscale: slow ? 3_000 : 0,
    }[kind];
    const prompt = upstream
      ? `[faults #${index}] ${UPSTREAM_PROMPT} under faults`
      : `[faults #${index}] ${kind} under faults${simFail ? ' sim:fail' : ''}${delayMs > 0 ? ` sim:delay=${delayMs}` : ''}`;
    const request: PlannedRequest = {
      index,
      account,
      door,
      kind,
      budgeted,
      customer,
      upstream,
      simFail,
      idempotencyKey: keyed ? `faults-${runId}-${index}` : undefined,
      ...(keyed && mix(index, 7) < 0.15 ? { loseFirstAnswerAfterMs: 20 + Math.round(mix(index, 8) * 400) } : {}),
      path: door === 'A' ? '/api/v1/generate' : door === 'B' ? '/v1/chat/completions' : '/api/generate',
      body: {},
    };
    switch (kind) {
      case 'image':
        request.body =
          door === 'A'
            ? { kind, model: upstream ? UPSTREAM_MODEL : 'flux', prompt, width: 512, height: 384 }
            : { kind, model: 'flux', prompt };
        break;
      case 'video':
        request.body =
          door === 'A'
            ? { kind, model: 'kling', prompt, seconds: 5, quality: '480p' }
            : { kind, model: 'hailuo', prompt, seconds: 6, quality: '480p' };
        break;
      case 'chat':
        if (door === 'B') {
          const stream = mix(index, 12) < 0.5;
          request.perTokenMc = findOpenAiChatModel(GROUP_B_CHAT_MODEL)!.priceMc;
          request.body = {
            model: GROUP_B_CHAT_MODEL,
            messages: [{ role: 'user', content: prompt }],
            max_tokens: 64,
            ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
          };
          break;
        }
        // No model: free while the account's allowance lasts, then the automatic model, paid.
        request.body = { kind, prompt };
        break;
      case 'upscale': {
        const input = inputs[index % inputs.length]!;
        const scale = mix(index, 6) < 0.7 ? 2 : 4;
        request.upscale = { input, scale };
        request.body =
          door === 'A' ? { kind, image_url: input.url, scale, prompt } : { kind, imageUrl: input.url, scale, prompt };
        break;
      }
    }
    // Groups A and C take the customer as `customer`, group B as OpenAI's `user`.
    if (customer !== undefined)
      request.body = door === 'B' ? { ...request.body, user: customer } : { ...request.body, customer };
    return request;
  });
}
