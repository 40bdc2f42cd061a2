import type pg from 'pg';
import { creditsToMc } from '../../core/money';
import type { Principal } from '../../core/accounts/principal';
import type { Provider, ProviderJob } from '../../core/providers/types';
import type { OutputStore } from '../../core/storage/output-store';
import type { ApiRunResult, GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationView } from '../../core/generation/view';
import type { RouteEntry } from '../../core/vocabulary';
import type { Admission } from '../generation/admission';
import { createOutcomeRecorder } from './outcome';
import { openStream } from './provider-stream';
import { CHAT_STREAM_LIMIT_MS, replyEvents } from './reply-stream';
import type { ChatRunEvent } from './reply-stream';
import type { SubmitOptions } from '../generation/types';
import { priceRequest } from '../generation/requests';
import type { GenerationRequest } from '../generation/requests';
import type { GenerationGateway } from '../generation/temporal-gateway';

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
  replay?: GenerationView;
  /** The reply as the provider sends it (reply-stream.ts): iterate once. */
  events: AsyncIterable<ChatRunEvent>;
  /** Resolves once the generation has settled or been released in the ledger (bounded wait). */
  settled(): Promise<void>;
}

type ChatRequest = Extract<GenerationRequest, { kind: 'chat' }>;

export interface ChatRunDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  provider: Provider;
  /** The admission every submit shares (Idempotency-Key claim, then the ledger's hold). */
  admission: Admission;
  /** The chat kind's deadline (DEADLINE_CHAT_MS): no reply runs longer. */
  deadlineMs?: number | undefined;
  log?: (message: string, err: unknown) => void;
}

export function createChatRuns(deps: ChatRunDeps) {
  const log = deps.log ?? ((message: string, err: unknown) => console.warn(message, err));

  const outcomes = createOutcomeRecorder({ pool: deps.pool, gateway: deps.gateway, log });
  const limitMs = Math.min(CHAT_STREAM_LIMIT_MS, deps.deadlineMs ?? CHAT_STREAM_LIMIT_MS);

  /** An Idempotency-Key repeat: the earlier reply, answered again from its record (as one delta, then its end). */
  const replayed = (g: GenerationView): ChatRun => {
    const text = g.text ?? '';
    const tokens = g.params.outputTokens ?? 0;
    const maxTokens = g.params.maxTokens ?? tokens;
    return {
      id: g.id,
      model: g.model,
      createdAt: g.createdAt,
      maxTokens,
      promptTokens: Math.ceil(g.prompt.length / 4),
      replay: g,
      events: (async function* (): AsyncGenerator<ChatRunEvent> {
        if (text) yield { type: 'delta', text };
        if (g.status !== 'failed')
          yield {
            type: 'end',
            finishReason: tokens >= maxTokens ? 'length' : 'stop',
            usage: { promptTokens: Math.ceil(g.prompt.length / 4), completionTokens: tokens },
          };
      })(),
      settled: () => Promise.resolve(),
    };
  };

  /**
   * `streamed`: each delta reaches the client as it comes (a stream), so a client deadline that
   * passes midway is charged for the tokens sent, as a disconnect is; a whole reply sends nothing
   * before its end, so its deadline charges nothing.
   */
  async function run(
    request: ChatRequest,
    principal: Principal,
    opts: SubmitOptions & { signal: AbortSignal; streamed?: boolean },
  ): Promise<ChatRun> {
    const runStarted = Date.now();
    await deps.admission.limitCustomer(principal, opts);
    const prior = await deps.admission.priorClaim(principal, opts);
    if (prior !== undefined) return replayed(await firstOf(deps.admission.replay(principal.accountId, prior, opts)));
    const priced = priceRequest(
      request,
      principal,
      opts.door,
      (model, feature) => deps.provider.serves?.(model, feature) ?? false,
    );
    const { ratePer1kMc } = priced.internal;
    if (ratePer1kMc === undefined || priced.params.maxTokens === undefined)
      throw new Error(`chat ${priced.model} is not billed per token`);
    const rate: number = ratePer1kMc;
    const maxTokens: number = priced.params.maxTokens;
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

    // The provider is asked while the hold is being placed when the balance read with the key
    // says the hold will be granted: its time to first token then hides the transaction. A
    // refusal after all (a concurrent spend) stops the upstream call before anything is sent.
    const stop = new AbortController();
    // Not for a key with a budget, nor past the request's own cap: the hold is then likelier refused.
    const likely =
      (principal.availableMc ?? 0) >= priced.quoteMc &&
      !principal.budgeted &&
      (opts.spendCap === undefined || creditsToMc(opts.spendCap.credits) >= priced.quoteMc);
    // The router's entries of every attempt, settled with the charge (its own write of them is best effort).
    const routes: RouteEntry[] = [];
    const routed = (entry: RouteEntry): void => void routes.push(entry);
    const early = likely ? openStream(deps.provider, job, stop.signal, routed) : undefined;
    let admitted: Awaited<ReturnType<Admission['admit']>>;
    try {
      admitted = await deps.admission.admit([priced], principal, opts);
    } catch (err) {
      stop.abort(new Error('not admitted'));
      throw err;
    }
    if ('replayOf' in admitted) {
      stop.abort(new Error('a repeat'));
      return replayed(await firstOf(deps.admission.replay(principal.accountId, admitted.replayOf, opts)));
    }

    const input: GenerationWorkflowInput = admitted.inputs[0]!;

    let finished!: (durable: boolean) => void;
    const outcome = new Promise<boolean>((done) => (finished = done));
    const finish = (result: ApiRunResult): void => {
      void outcomes.record(input, result).then(finished);
    };

    return {
      id: input.generationId,
      model: input.model,
      createdAt: new Date(),
      maxTokens,
      promptTokens: Math.ceil(priced.prompt.length / 4),
      events: replyEvents({
        job,
        provider: deps.provider,
        store: deps.store,
        early,
        stop,
        routes,
        maxTokens,
        ratePer1kMc: rate,
        limitMs,
        signal: opts.signal,
        deadlineMs: opts.deadlineMs,
        startedAt: runStarted,
        streamed: opts.streamed === true,
        finish,
        log,
      }),
      async settled() {
        // Normally the ledger has it already; else the workflow is settling it from the report.
        if (!(await outcome)) await deps.gateway.awaitFinish(input.generationId, 10_000);
      },
    };
  }

  return {
    run,
    /** Resolves once every outcome still on its way to a workflow has been handed over: call before closing. */
    drain: outcomes.drain,
  };
}

/** The one generation of a replayed chat request. */
async function firstOf(replay: Promise<{ generations: GenerationView[] }>): Promise<GenerationView> {
  return (await replay).generations[0]!;
}
