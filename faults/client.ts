// A careful client. A request with an Idempotency-Key is sent again, with the same key and body,
// when the answer is a 5xx or the connection drops: the key makes that safe. One without a key is
// sent once (sending it again could make a second generation). A 429 is waited out either way,
// since nothing was made.
import { setTimeout as sleep } from 'node:timers/promises';
import { chargeForTokens } from '../core/catalogue/pricing';
import type { PlannedRequest } from './workload';

const REQUEST_TIMEOUT_MS = 90_000;
const POLL_EVERY_MS = 2_000;
/** A generation still in flight after this is left to the settle phase and the checks. */
const POLL_FOR_MS = 240_000;
const MAX_ATTEMPTS = 12;
/** A careful client gives up after this long; PostgreSQL and Temporal are each down for far less. */
const RETRY_FOR_MS = 240_000;

export interface Attempt {
  /** Since the run started, ms. */
  at: number;
  ms: number;
  status: number | 'dropped';
  /** Why the connection dropped, or the error type of a 4xx/5xx. */
  detail?: string;
  /** The error message of a 4xx/5xx. */
  message?: string;
  retryAfter?: string;
}

export interface Outcome {
  request: PlannedRequest;
  attempts: Attempt[];
  /** The last answer: what the client was left with. */
  final: Attempt;
  /** Every generation id a 2xx answer named (one, however many attempts, if keys work). */
  idsSeen: string[];
  /** The generation of the final answer, when it was a 2xx, as last seen (polled until it finished). */
  generation?: { id: string; status: string; creditsCharged: number };
  /** The GETs that followed a generation answered while still queued or running. */
  polls: Attempt[];
}

interface GenerationAnswer {
  id: string;
  status: string;
  creditsCharged: number;
}

/**
 * A group B chat's answer as its generation: a whole reply (`chat.completion` with its usage) or a
 * stream that ended with `[DONE]`, its usage chunk last; both are answered once charged, at the
 * model's price per 1,000 output tokens.
 */
function chatReplyOf(text: string, perTokenMc: number): GenerationAnswer | undefined {
  const charged = (tokens: number) => chargeForTokens(tokens, perTokenMc) / 1000;
  if (!text.startsWith('data: ')) {
    const reply = JSON.parse(text) as { id?: string; usage?: { completion_tokens?: number } };
    return typeof reply.id === 'string' && reply.usage?.completion_tokens !== undefined
      ? { id: reply.id, status: 'succeeded', creditsCharged: charged(reply.usage.completion_tokens) }
      : undefined;
  }
  const events = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));
  if (events.at(-1) !== '[DONE]') return undefined;
  const chunks = events
    .slice(0, -1)
    .map((e) => JSON.parse(e) as { id?: string; usage?: { completion_tokens?: number } });
  const id = chunks[0]?.id;
  const tokens = chunks.at(-1)?.usage?.completion_tokens;
  return typeof id === 'string' && tokens !== undefined
    ? { id, status: 'succeeded', creditsCharged: charged(tokens) }
    : undefined;
}

function generationOf(body: unknown): GenerationAnswer | undefined {
  const b = body as { generation?: GenerationAnswer } & Partial<GenerationAnswer>;
  const g = b?.generation ?? b;
  return typeof g?.id === 'string' && typeof g.status === 'string'
    ? { id: g.id, status: g.status, creditsCharged: Number(g.creditsCharged ?? 0) }
    : undefined;
}

function backoffMs(attempt: number, retryAfter: string | undefined): number {
  const asked = retryAfter === undefined ? Number.NaN : Number(retryAfter) * 1_000;
  const base = Number.isFinite(asked) ? asked : 500 * 2 ** (attempt - 1);
  // Jitter, so that the clients a fault turned away do not all come back in the same instant.
  return Math.min(10_000, base) * (0.75 + Math.random() * 0.5);
}

interface Exchange {
  attempt: Attempt;
  generation?: GenerationAnswer;
}

/** One HTTP exchange, described as an attempt; a lost connection is an attempt too. */
async function exchange(
  url: string,
  init: RequestInit,
  runStarted: number,
  signal: AbortSignal,
  stop: AbortSignal,
  perTokenMc?: number,
): Promise<Exchange> {
  const started = Date.now();
  const attempt: Attempt = { at: started - runStarted, ms: 0, status: 'dropped' };
  let generation: GenerationAnswer | undefined;
  try {
    const res = await fetch(url, { ...init, signal });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: kept as text.
    }
    attempt.status = res.status;
    const retryAfter = res.headers.get('retry-after');
    if (retryAfter !== null) attempt.retryAfter = retryAfter;
    if (res.status >= 400) {
      const error = (body as { error?: { type?: string; message?: string } })?.error;
      attempt.detail = error?.type ?? String(text).slice(0, 80);
      if (error?.message) attempt.message = error.message;
    }
    generation =
      res.status >= 300 ? undefined : perTokenMc === undefined ? generationOf(body) : chatReplyOf(text, perTokenMc);
  } catch (err) {
    if (stop.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    attempt.detail =
      (err as Error).name === 'TimeoutError'
        ? 'answer lost (client stopped waiting)'
        : (cause?.code ?? cause?.message ?? (err as Error).name);
  }
  attempt.ms = Date.now() - started;
  return generation ? { attempt, generation } : { attempt };
}

const TERMINAL = new Set(['succeeded', 'failed']);

export function createClient(baseUrl: string, runStarted: number, stop: AbortSignal) {
  /** Follows a generation until it finishes, as a client of a video does; errors are waited out. */
  const follow = async (
    request: PlannedRequest,
    token: string,
    generation: GenerationAnswer,
    polls: Attempt[],
  ): Promise<GenerationAnswer> => {
    const path = request.door === 'A' ? `/api/v1/generations/${generation.id}` : `/api/generate/${generation.id}`;
    const until = Date.now() + POLL_FOR_MS;
    let seen = generation;
    while (!TERMINAL.has(seen.status) && Date.now() < until) {
      await sleep(POLL_EVERY_MS, undefined, { signal: stop });
      const polled = await exchange(
        `${baseUrl}${path}`,
        { headers: { authorization: `Bearer ${token}` } },
        runStarted,
        AbortSignal.any([stop, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        stop,
      );
      polls.push(polled.attempt);
      if (polled.generation) seen = polled.generation;
    }
    return seen;
  };

  return async function send(request: PlannedRequest, token: string): Promise<Outcome> {
    const attempts: Attempt[] = [];
    const polls: Attempt[] = [];
    const idsSeen: string[] = [];
    const first = Date.now();
    let generation: GenerationAnswer | undefined;
    for (let n = 1; ; n++) {
      const timeout = n === 1 ? (request.loseFirstAnswerAfterMs ?? REQUEST_TIMEOUT_MS) : REQUEST_TIMEOUT_MS;
      const sent = await exchange(
        `${baseUrl}${request.path}`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            ...(request.idempotencyKey ? { 'idempotency-key': request.idempotencyKey } : {}),
          },
          body: JSON.stringify(request.body),
        },
        runStarted,
        AbortSignal.any([stop, AbortSignal.timeout(timeout)]),
        stop,
        request.perTokenMc,
      );
      const { attempt } = sent;
      generation = sent.generation;
      if (generation) idsSeen.push(generation.id);
      attempts.push(attempt);
      const status = attempt.status;
      const retryable =
        status === 429 || ((status === 'dropped' || status >= 500) && request.idempotencyKey !== undefined);
      if (!retryable || n >= MAX_ATTEMPTS || Date.now() - first > RETRY_FOR_MS) break;
      await sleep(backoffMs(n, attempt.retryAfter), undefined, { signal: stop });
    }
    if (generation) generation = await follow(request, token, generation, polls);
    const final = attempts[attempts.length - 1]!;
    return { request, attempts, final, idsSeen, polls, ...(generation ? { generation } : {}) };
  };
}

export type Send = ReturnType<typeof createClient>;
