import type pg from 'pg';
import { creditsToMc } from '../../../core/money';
import type { Principal } from '../../../core/accounts/principal';
import { estimatedInputTokens, tokenUsageOf } from '../../../core/providers/token-usage';
import type { Provider, ProviderJob } from '../../../core/providers/types';
import type { OutputStore } from '../../../core/storage/output-store';
import type { ApiRunResult, GenerationWorkflowInput } from '../../../core/workflow-contract';
import type { GenerationView } from '../../../core/generation/view';
import type { PricedGeneration } from '../../../core/generation/workflow-input';
import type { RouteEntry } from '../../../core/vocabulary';
import { openStream } from '../../chat/provider-stream';
import { choiceGroup } from '../../chat/choices';
import type { ChoiceGroup } from '../../chat/choices';
import { CHAT_STREAM_LIMIT_MS, replyEvents } from '../../chat/reply-stream';
import type { ChatRunEvent } from '../../chat/reply-stream';
import type { SubmitKind, SubmitPipeline } from '../pipeline';
import type { GenerationRequest } from '../requests';
import type { GenerationGateway } from '../temporal-gateway';
import type { SubmitOptions } from '../types';
import { createOutcomeRecorder } from './chat-outcome';

/**
 * Chats the API runs itself, so that a reply never waits on a workflow (DESIGN §5):
 *
 *   admit (one PostgreSQL transaction: the hold, with its deadline) ─► open the provider stream
 *     ─► deltas to the client
 *   end of the stream (complete, client gone, failed) ─► the ledger settles or releases, here
 *     ─► start the workflow with the outcome (search attributes final) ─► it records it in its first task
 *
 * The money is exact either way: the ledger moves a hold once. The workflow records what this
 * process settled, or settles it from the outcome when this process could not reach the ledger.
 * Should this process die mid-reply, no workflow ever starts: the hold's deadline passes and the
 * reconciler releases it (docs/decisions/0090-chat-recorded-at-its-end.md). A whole reply is
 * answered once its charge is durable.
 */

/** How long past the reply's limit the hold may stay held: the API's own settle and its workflow's start. */
const HOLD_MARGIN_MS = 30_000;

export interface ChatRun {
  id: string;
  /** The model that answers (canonical id). */
  model: string;
  createdAt: Date;
  /** The most output tokens the run may produce: what its hold covers. */
  maxTokens: number;
  /** The input's size in tokens as estimated before the run (about four characters a token); the provider's own count comes with the end. */
  promptTokens: number;
  /** An Idempotency-Key repeat: the earlier generation (as far as it got), nothing new admitted. */
  repeatOf?: GenerationView;
  /** The reply as the provider sends it (reply-stream.ts): iterate once. */
  events: AsyncIterable<ChatRunEvent>;
  /** Resolves once the generation has settled or been released in the ledger (bounded wait). */
  settled(): Promise<void>;
  /** The reply has begun to reach the client (a stream's first chunk): from here it is charged what reached it. */
  answered(): void;
}

type ChatRequest = Extract<GenerationRequest, { kind: 'chat' }>;

/** A streamed chat's options: `signal` is the client going away. */
export type ChatRunOptions = SubmitOptions & { signal: AbortSignal; streamed?: boolean };

/** Several choices of one request (OpenAI's `n`): one generation each, held together, all or none. */
export type ChatChoicesOptions = ChatRunOptions & { count: number };

/** What the work before the hold hands to the run. */
interface Ready {
  job: ProviderJob;
  /** Stops the provider's stream (a refused hold, the run's end, a limit, the client). */
  stop: AbortController;
  /** The router's entries of every attempt. */
  routes: RouteEntry[];
  /** The stream opened while the hold was being placed, if it was. */
  early: ReturnType<typeof openStream> | undefined;
  rate: number;
  maxTokens: number;
}

export interface ChatRunDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  provider: Provider;
  /** The pipeline every submit goes through (rate limit and Idempotency-Key, price, hold). */
  submit: SubmitPipeline;
  /** The chat kind's deadline (DEADLINE_CHAT_MS): no reply runs longer. */
  deadlineMs?: number | undefined;
  log?: (message: string, err: unknown) => void;
}

/** What the chat's steps share: the dependencies, where outcomes go, and how long a reply may run. */
interface ChatContext {
  deps: ChatRunDeps;
  outcomes: ReturnType<typeof createOutcomeRecorder>;
  limitMs: number;
  log: (message: string, err: unknown) => void;
}

export function createStreamedChat(deps: ChatRunDeps) {
  const log = deps.log ?? ((message: string, err: unknown) => console.warn(message, err));
  const outcomes = createOutcomeRecorder({ pool: deps.pool, gateway: deps.gateway, log });
  const limitMs = Math.min(CHAT_STREAM_LIMIT_MS, deps.deadlineMs ?? CHAT_STREAM_LIMIT_MS);
  const chat: ChatContext = { deps, outcomes, limitMs, log };

  /** Runs a chat through the submit pipeline, its reply streamed as the provider gives it. */
  const run = async (request: ChatRequest, principal: Principal, opts: ChatRunOptions): Promise<ChatRun> =>
    (await deps.submit(kindOf(chat, Date.now()), request, principal, { ...opts, count: 1 }))[0]!;

  /**
   * Several choices of one chat, each its own generation and reply: held together (all or none),
   * each charged the tokens it produced, and answered and charged all or none until the answer
   * has begun to reach the client.
   */
  const runChoices = (request: ChatRequest, principal: Principal, opts: ChatChoicesOptions): Promise<ChatRun[]> =>
    deps.submit(kindOf(chat, Date.now()), request, principal, opts);

  return {
    run,
    runChoices,
    /** Resolves once every outcome still on its way to a workflow has been handed over: call before closing. */
    drain: outcomes.drain,
  };
}

/**
 * The streamed chat's own steps. `startedAt` is when its request arrived: the client's deadline
 * counts from there. `streamed`: each delta reaches the client as it comes (a stream), so a client
 * deadline that passes midway is charged for the tokens sent, as a disconnect is; a whole reply
 * sends nothing before its end, so its deadline charges nothing.
 */
function kindOf(chat: ChatContext, startedAt: number): SubmitKind<ChatChoicesOptions, Ready[], ChatRun[]> {
  return {
    beforeHold(all, _request, principal, opts) {
      // The provider is asked while the hold is being placed when the balance read with the key
      // says the hold will be granted: its time to first token then hides the transaction. A
      // refusal after all (a concurrent spend) stops the upstream call before anything is sent.
      // Not for a key with a budget, nor past the request's own cap: the hold is then likelier refused.
      const quoteMc = all.reduce((sum, priced) => sum + priced.quoteMc, 0);
      const likely =
        (principal.availableMc ?? 0) >= quoteMc &&
        !principal.budgeted &&
        (opts.spendCap === undefined || creditsToMc(opts.spendCap.credits) >= quoteMc);
      return all.map((priced) => readyOf(chat, priced, likely));
    },

    notHeld: (readies, why) => {
      for (const ready of readies) ready.stop.abort(new Error(why));
    },

    start: (held, readies, opts) => {
      // A reply's choices are answered all or none, and so charged (service/chat/choices.ts).
      const group = readies.length > 1 ? choiceGroup(readies.length) : undefined;
      return readies.map((ready, i) =>
        startRun(chat, held.inputs[i]!, ready, opts, startedAt, group && { group, index: i }),
      );
    },

    answerRepeat: (first) => first.generations.map(repeatedRun),
  };
}

/** One choice's work before the hold: its provider job, and its stream opened early when the hold is likely. */
function readyOf({ deps, limitMs }: ChatContext, priced: PricedGeneration, likely: boolean): Ready {
  const { ratePer1kMc } = priced.internal;
  if (ratePer1kMc === undefined || priced.params.maxTokens === undefined)
    throw new Error(`chat ${priced.model} is not billed per token`);
  priced.internal = { ...priced.internal, recordedByApi: true };
  priced.admittedRunning = true;
  priced.resolveWithinMs = limitMs + HOLD_MARGIN_MS;
  const job: ProviderJob = {
    generationId: priced.generationId,
    kind: 'chat',
    model: priced.model,
    prompt: priced.prompt,
    params: priced.params,
    internal: priced.internal,
  };
  const stop = new AbortController();
  // The router's entries of every attempt, settled with the charge (its own write of them is best effort).
  const routes: RouteEntry[] = [];
  const routed = (entry: RouteEntry): void => void routes.push(entry);
  const early = likely ? openStream(deps.provider, job, stop.signal, routed) : undefined;
  return { job, stop, routes, early, rate: ratePer1kMc, maxTokens: priced.params.maxTokens };
}

/** One held choice's run: its reply as the provider gives it, settled or released on its own. */
function startRun(
  { deps, outcomes, limitMs, log }: ChatContext,
  input: GenerationWorkflowInput,
  ready: Ready,
  opts: ChatRunOptions,
  startedAt: number,
  choice?: { group: ChoiceGroup; index: number },
): ChatRun {
  let finished!: (durable: boolean) => void;
  const outcome = new Promise<boolean>((done) => (finished = done));
  const record = (result: ApiRunResult): void => {
    void outcomes.record(input, result).then(finished);
  };
  const finish = choice ? choice.group.finishOf(choice.index, record) : record;
  return {
    id: input.generationId,
    model: input.model,
    createdAt: new Date(),
    maxTokens: ready.maxTokens,
    promptTokens: estimatedInputTokens(ready.job.prompt),
    events: replyEvents({
      job: ready.job,
      provider: deps.provider,
      store: deps.store,
      early: ready.early,
      stop: ready.stop,
      routes: ready.routes,
      maxTokens: ready.maxTokens,
      ratePer1kMc: ready.rate,
      limitMs,
      signal: choice ? AbortSignal.any([opts.signal, choice.group.signal]) : opts.signal,
      deadlineMs: opts.deadlineMs,
      startedAt,
      streamed: opts.streamed === true,
      finish,
      log,
    }),
    answered: () => choice?.group.answered(),
    async settled() {
      // Normally the ledger has it already; else the workflow is settling it from the report.
      if (!(await outcome)) await deps.gateway.awaitFinish(input.generationId, 10_000);
    },
  };
}

/** An Idempotency-Key repeat: the earlier reply, answered again from its record (as one delta, then its end). */
function repeatedRun(g: GenerationView): ChatRun {
  const text = g.text ?? '';
  const tokens = g.params.outputTokens ?? 0;
  const maxTokens = g.params.maxTokens ?? tokens;
  return {
    id: g.id,
    model: g.model,
    createdAt: g.createdAt,
    maxTokens,
    promptTokens: estimatedInputTokens(g.prompt),
    repeatOf: g,
    events: (async function* (): AsyncGenerator<ChatRunEvent> {
      if (text) yield { type: 'delta', text };
      if (g.status !== 'failed')
        yield {
          type: 'end',
          finishReason: tokens >= maxTokens ? 'length' : 'stop',
          usage: g.usage ?? tokenUsageOf(undefined, { prompt: g.prompt, charged: tokens }),
        };
    })(),
    settled: () => Promise.resolve(),
    answered: () => undefined,
  };
}
