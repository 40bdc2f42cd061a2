import type pg from 'pg';
import { release, settle } from '../../core/ledger';
import { DeadlineExceededError, markAfterAdmission, ProviderRejectedError } from '../../core/errors';
import { creditsToMc } from '../../core/money';
import { chargeForTokens } from '../../core/catalogue/pricing';
import type { Principal } from '../../core/accounts/principal';
import { toolCallAssembler } from '../../core/providers/tool-calls';
import type { ChatStreamEvent, Provider, ProviderJob } from '../../core/providers/types';
import type { OutputStore } from '../../core/storage/output-store';
import type { ApiRunResult, GenerationWorkflowInput } from '../../core/workflow-contract';
import type { GenerationView } from '../../core/generation/view';
import type { RouteEntry, ToolCall } from '../../core/vocabulary';
import type { Admission } from '../generation/admission';
import { clientErrorOf, failureOf, openStream, storeText } from './provider-stream';
import type { SubmitOptions } from '../generation/types';
import { priceRequest } from '../generation/requests';
import type { GenerationRequest } from '../generation/requests';
import type { GenerationGateway } from '../generation/temporal-gateway';

/**
 * Chats the API runs itself, so that a reply never waits on a workflow (DESIGN §5):
 *
 *   admit (one PostgreSQL transaction: the hold) ─┬─► start the workflow (not awaited)
 *                                                 └─► open the provider stream ─► deltas to the client
 *   end of the stream (complete, client gone, failed) ─► the ledger settles or releases, here
 *                                                     ─► report to the workflow ─► its settle finds it done
 *
 * The money is exact either way: the ledger moves a hold once, so the workflow (started with
 * `apiRun`: it runs no provider activity, waits for the report, and releases by itself when none
 * comes before its deadline) records what this process settled, or settles it when this process
 * could not reach the ledger. A whole reply is answered once its charge is durable.
 */

/** A reply may stream this long; the workflow waits for the report a little longer. */
export const CHAT_STREAM_LIMIT_MS = 10 * 60_000;
const REPORT_GRACE_MS = 2 * 60_000;
/** Attempts at opening the provider's stream, while nothing has reached the client yet. */
const STREAM_ATTEMPTS = 3;
const RETRY_PAUSE_MS = 250;

export type ChatRunEvent =
  | { type: 'delta'; text: string }
  /** A piece of a function call (only when the request offered functions and its provider serves them). */
  | Extract<ChatStreamEvent, { type: 'tool_call' }>
  /** The reply is complete: `length` when it stopped at max_tokens, `tool_calls` when it called functions. */
  | { type: 'end'; finishReason: 'stop' | 'length' | 'tool_calls'; usage: { promptTokens: number; completionTokens: number } };

export interface ChatRun {
  id: string;
  /** The model that answers (canonical id). */
  model: string;
  createdAt: Date;
  /** The most output tokens the run may produce: what its hold covers. */
  maxTokens: number;
  /** An Idempotency-Key repeat: the earlier generation (as far as it got), nothing new admitted. */
  replay?: GenerationView;
  /**
   * The reply as the provider sends it. Iterate once. Stopping early (the client went away) ends
   * the run: the tokens handed out so far are charged. A failure before the first delta throws a
   * DomainError for the client; after it, the generation fails (released) and the error is thrown.
   */
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
  log?: (message: string, err: unknown) => void;
}

export function createChatRuns(deps: ChatRunDeps) {
  const log = deps.log ?? ((message: string, err: unknown) => console.warn(message, err));

  /** Outcomes on their way to their workflows, so that a graceful stop waits for them. */
  const reporting = new Set<Promise<void>>();

  /**
   * Records the outcome where the reply was produced — the charge (or the release) is durable in
   * the ledger before the client hears the end — then hands it to the workflow, whose own settle
   * or release finds the hold moved and records the outcome in Temporal. Should the ledger be out
   * of reach for now, the workflow settles it (with its retries) from the report; should the
   * report not arrive, the workflow's deadline comes and its release finds the charge.
   */
  const resolve = async (input: GenerationWorkflowInput, started: Promise<unknown>, result: ApiRunResult): Promise<boolean> => {
    let recorded: ApiRunResult['recorded'];
    try {
      const resolution = await (result.ok ? settle(deps.pool, { generationId: input.generationId, ...result.output }) : release(deps.pool, input.generationId, result.error));
      recorded = resolution.outcome === 'already' ? resolution.state : resolution.outcome;
    } catch (err) {
      log(`generation ${input.generationId}: the ledger could not record the outcome here; the workflow will`, err);
    }
    const durable = recorded !== undefined;
    const reported = started
      .then(() => deps.gateway.reportApiRun(input, { ...result, ...(durable ? { recorded } : {}) }))
      .catch((err: unknown) => log(`generation ${input.generationId}: the workflow could not be told the outcome; its deadline will close it`, err))
      .finally(() => reporting.delete(reported));
    reporting.add(reported);
    if (!durable) await reported;
    return durable;
  };

  /** An Idempotency-Key repeat: the earlier reply, answered again from its record (as one delta, then its end). */
  const replayed = (g: GenerationView): ChatRun => {
    const text = g.text ?? '';
    const tokens = g.params.outputTokens ?? 0;
    const maxTokens = g.params.maxTokens ?? tokens;
    return {
      id: g.id, model: g.model, createdAt: g.createdAt, maxTokens, replay: g,
      events: (async function* (): AsyncGenerator<ChatRunEvent> {
        if (text) yield { type: 'delta', text };
        if (g.status !== 'failed') yield { type: 'end', finishReason: tokens >= maxTokens ? 'length' : 'stop', usage: { promptTokens: Math.ceil(g.prompt.length / 4), completionTokens: tokens } };
      })(),
      settled: () => Promise.resolve(),
    };
  };

  /**
   * `streamed`: each delta reaches the client as it comes (a stream), so a client deadline that
   * passes midway is charged for the tokens sent, as a disconnect is; a whole reply sends nothing
   * before its end, so its deadline charges nothing.
   */
  async function run(request: ChatRequest, principal: Principal, opts: SubmitOptions & { signal: AbortSignal; streamed?: boolean }): Promise<ChatRun> {
    const runStarted = Date.now();
    const prior = await deps.admission.priorClaim(principal, opts);
    if (prior !== undefined) return replayed(await firstOf(deps.admission.replay(principal.accountId, prior, opts)));
    const priced = priceRequest(request, principal, opts.door, (model, feature) => deps.provider.serves?.(model, feature) ?? false);
    const { ratePer1kMc } = priced.internal;
    if (ratePer1kMc === undefined || priced.params.maxTokens === undefined) throw new Error(`chat ${priced.model} is not billed per token`);
    const rate: number = ratePer1kMc;
    const maxTokens: number = priced.params.maxTokens;
    priced.internal = { ...priced.internal, apiRunDeadlineMs: CHAT_STREAM_LIMIT_MS + REPORT_GRACE_MS };
    priced.apiRun = { deadlineMs: CHAT_STREAM_LIMIT_MS + REPORT_GRACE_MS, admittedRunning: true };
    const job: ProviderJob = { generationId: priced.generationId, kind: 'chat', model: priced.model, prompt: priced.prompt, params: priced.params, internal: priced.internal };

    // The provider is asked while the hold is being placed when the balance read with the key
    // says the hold will be granted: its time to first token then hides the transaction. A
    // refusal after all (a concurrent spend) stops the upstream call before anything is sent.
    const stop = new AbortController();
    // Not for a key with a budget, nor past the request's own cap: the hold is then likelier refused.
    const likely = (principal.availableMc ?? 0) >= priced.quoteMc && !principal.budgeted
      && (opts.spendCap === undefined || creditsToMc(opts.spendCap.credits) >= priced.quoteMc);
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

    // Fired now, awaited only when the outcome is reported: the first token does not wait for it.
    const started = deps.gateway.start(input).catch((err: unknown) => log(`generation ${input.generationId}: start failed; retried when the run is reported`, err));
    let finished!: (durable: boolean) => void;
    const outcome = new Promise<boolean>((done) => (finished = done));
    const finish = (result: ApiRunResult): void => {
      void resolve(input, started, result).then(finished);
    };

    const store = deps.store;
    const provider = deps.provider;

    async function* events(): AsyncGenerator<ChatRunEvent> {
      const limit = setTimeout(() => stop.abort(new Error('the reply took longer than allowed')), CHAT_STREAM_LIMIT_MS);
      const onClientGone = () => stop.abort(new Error('the client went away'));
      // The client's own deadline, from when its request arrived: it ends the reply like a disconnect.
      let deadlinePassed = false;
      const deadline = opts.deadlineMs === undefined ? undefined : setTimeout(() => {
        deadlinePassed = true;
        stop.abort(new Error('the client’s deadline passed'));
      }, Math.max(0, opts.deadlineMs - (Date.now() - runStarted)));
      opts.signal.addEventListener('abort', onClientGone, { once: true });
      if (opts.signal.aborted) onClientGone();
      let delivered = 0;
      let text = '';
      const calls = toolCallAssembler();
      let providerTokens: number | undefined;
      // The provider's count when it gives one; else about four characters a token.
      let promptTokens = Math.ceil(input.prompt.length / 4);
      let outcome: 'complete' | 'length' | 'client_gone' | 'deadline' | { failed: unknown } = 'client_gone';
      try {
        for (let attempt = 1; ; attempt++) {
          try {
            const stream = attempt === 1 && early ? early : openStream(provider, job, stop.signal, routed);
            for await (const event of stream) {
              if (event.type === 'usage') {
                providerTokens = event.outputTokens;
                promptTokens = event.promptTokens ?? promptTokens;
                continue;
              }
              if (event.type === 'tool_call') {
                delivered++;
                calls.add(event);
                yield event;
                if (delivered >= maxTokens) break;
                continue;
              }
              if (event.text === '') continue;
              if (deadlinePassed) break;
              // One delta is one token unless the provider counts otherwise (it says so at the end).
              delivered++;
              text += event.text;
              yield { type: 'delta', text: event.text };
              // An upstream that ignores max_tokens is cut off there: the hold covers no more.
              if (delivered >= maxTokens) break;
            }
            break;
          } catch (err) {
            if (stop.signal.aborted) throw err;
            const retryable = !(err instanceof ProviderRejectedError) && delivered === 0 && attempt < STREAM_ATTEMPTS;
            if (!retryable) throw err;
            await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS * attempt));
          }
        }
        if (deadlinePassed) throw new Error('the client’s deadline passed');
        const tokens = Math.min(providerTokens ?? delivered, maxTokens);
        outcome = delivered >= maxTokens || tokens >= maxTokens ? 'length' : 'complete';
        const finishReason = outcome === 'length' ? 'length' : calls.calls().length > 0 ? 'tool_calls' : 'stop';
        yield { type: 'end', finishReason, usage: { promptTokens, completionTokens: tokens } };
      } catch (err) {
        if (opts.signal.aborted) {
          outcome = 'client_gone';
          return;
        }
        if (deadlinePassed) {
          outcome = 'deadline';
          const seconds = (opts.deadlineMs ?? 0) / 1000;
          const sent = opts.streamed === true ? delivered : 0;
          throw markAfterAdmission(new DeadlineExceededError(sent > 0
            ? `The deadline of ${seconds} s (Cancel-After) passed; the reply stopped after ${sent} tokens, which were charged.`
            : `The deadline of ${seconds} s (Cancel-After) passed before the reply was complete; nothing was charged.`));
        }
        outcome = { failed: err };
        // The provider's own words are for the operator; the client and the record get ours.
        log(`generation ${input.generationId}: the provider failed the streamed chat`, err);
        throw markAfterAdmission(clientErrorOf(err));
      } finally {
        clearTimeout(limit);
        clearTimeout(deadline);
        opts.signal.removeEventListener('abort', onClientGone);
        stop.abort(new Error('the run ended'));
        // Complete: the provider's own count when it gave one. Cut short by the client: what was
        // handed out, never more (the provider may have produced a few more that nobody saw).
        // A deadline is a disconnect the client asked for in advance: what reached it, if it streams.
        const cut = outcome === 'client_gone' || outcome === 'deadline';
        const sent = outcome === 'deadline' && opts.streamed !== true ? 0 : delivered;
        const tokens = Math.min(cut ? sent : (providerTokens ?? delivered), maxTokens);
        const failed = typeof outcome === 'object' ? outcome.failed : undefined;
        if (outcome === 'deadline' && tokens === 0) {
          finish({ ok: false, error: { code: 'timeout', message: 'The client’s deadline (Cancel-After) passed before the reply was complete; nothing was charged.', retryable: true } });
        } else if (failed !== undefined || tokens === 0) {
          // A failure costs nothing (spec), even when part of it reached the client.
          finish({ ok: false, error: failed === undefined ? { code: 'cancelled', message: 'The client went away before the first token.', retryable: true } : failureOf(failed) });
        } else {
          void storeText(store, input.generationId, text).then((outputKey) =>
            finish({ ok: true, output: { outputKey, outputText: text, chargeMc: chargeForTokens(tokens, rate), outputTokens: tokens, ...toolCallsOf(calls.calls()), ...(routes.length > 0 ? { routes } : {}) } }),
          );
        }
      }
    }

    return {
      id: input.generationId,
      model: input.model,
      createdAt: new Date(),
      maxTokens,
      events: events(),
      async settled() {
        // Normally the ledger has it already; else the workflow is settling it from the report.
        if (!(await outcome)) await deps.gateway.awaitFinish(input.generationId, 10_000);
      },
    };
  }

  return {
    run,
    /** Resolves once every outcome still on its way to a workflow has been handed over: call before closing. */
    drain: async (): Promise<void> => {
      await Promise.allSettled([...reporting]);
    },
  };
}

const toolCallsOf = (toolCalls: ToolCall[]): { toolCalls?: ToolCall[] } => (toolCalls.length > 0 ? { toolCalls } : {});

/** The one generation of a replayed chat request. */
async function firstOf(replay: Promise<{ generations: GenerationView[] }>): Promise<GenerationView> {
  return (await replay).generations[0]!;
}
