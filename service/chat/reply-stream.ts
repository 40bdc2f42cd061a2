import { chargedTokens, tokenCharge } from '../../core/catalogue/pricing';
import { DeadlineExceededError, markAfterAdmission, ProviderRejectedError } from '../../core/errors';
import { toolCallAssembler } from '../../core/providers/tool-calls';
import { tokenUsageOf } from '../../core/providers/token-usage';
import type { ChatStreamEvent, Provider, ProviderJob, ProviderUsage } from '../../core/providers/types';
import type { OutputStore } from '../../core/storage/output-store';
import type { RouteEntry, TokenUsage, ToolCall } from '../../core/vocabulary';
import type { ApiRunResult } from '../../core/workflow-contract';
import { clientErrorOf, failureOf, openStream, storeText } from './provider-stream';

/** A reply may stream this long at most (less when the chat's deadline is shorter). */
export const CHAT_STREAM_LIMIT_MS = 10 * 60_000;
/** Attempts at opening the provider's stream, while nothing has reached the client yet. */
const STREAM_ATTEMPTS = 3;
const RETRY_PAUSE_MS = 250;

export type ChatRunEvent =
  | Extract<ChatStreamEvent, { type: 'delta' }>
  /** A piece of a function call (only when the request offered functions and its provider serves them). */
  | Extract<ChatStreamEvent, { type: 'tool_call' }>
  /** The reply is complete: `length` when it stopped at max_tokens, `tool_calls` when it called functions. */
  | {
      type: 'end';
      finishReason: 'stop' | 'length' | 'tool_calls';
      usage: TokenUsage;
    };

/** One admitted chat's reply, as the provider gives it. */
export interface ReplyRun {
  job: ProviderJob;
  provider: Provider;
  store: OutputStore;
  /** The stream opened while the hold was being placed, if it was. */
  early: AsyncIterable<ChatStreamEvent> | undefined;
  /** Stops the provider's stream: the run's own end, a limit, the client's deadline or its going away. */
  stop: AbortController;
  /** The router's entries of every attempt, settled with the charge. */
  routes: RouteEntry[];
  /** The most output tokens the hold covers, and the rate they are charged at. */
  maxTokens: number;
  ratePer1kMc: number;
  /** The longest the reply may run: it then fails, nothing charged (the hold's deadline follows it closely). */
  limitMs: number;
  /** The client went away. */
  signal: AbortSignal;
  /** The client's own deadline, in ms from `startedAt` (when its request arrived). */
  deadlineMs: number | undefined;
  startedAt: number;
  /** Each delta reached the client as it came: a deadline that passes midway charges what was sent. */
  streamed: boolean;
  /** Called once with what the run came to: charged for the tokens produced, or failed (nothing charged). */
  finish: (result: ApiRunResult) => void;
  log: (message: string, err: unknown) => void;
}

type Outcome = 'complete' | 'length' | 'client_gone' | 'deadline' | { failed: unknown };

/**
 * The reply as the client gets it. Iterate once. Stopping early (the client went away) ends the
 * run: the tokens handed out so far are charged. A failure before the first delta throws a
 * DomainError for the client; after it, the generation fails (released) and the error is thrown.
 * An upstream that ignores max_tokens is cut off there: the hold covers no more.
 */
export async function* replyEvents(r: ReplyRun): AsyncGenerator<ChatRunEvent> {
  const { job, stop, maxTokens } = r;
  const routed = (entry: RouteEntry): void => void r.routes.push(entry);
  const limit = setTimeout(() => stop.abort(new Error('the reply took longer than allowed')), r.limitMs);
  const onClientGone = () => stop.abort(new Error('the client went away'));
  // The client's own deadline, from when its request arrived: it ends the reply like a disconnect.
  let deadlinePassed = false;
  const deadline =
    r.deadlineMs === undefined
      ? undefined
      : setTimeout(
          () => {
            deadlinePassed = true;
            stop.abort(new Error('the client’s deadline passed'));
          },
          Math.max(0, r.deadlineMs - (Date.now() - r.startedAt)),
        );
  r.signal.addEventListener('abort', onClientGone, { once: true });
  if (r.signal.aborted) onClientGone();
  let delivered = 0;
  let text = '';
  const calls = toolCallAssembler();
  /** The provider's count when it gives one (at the end); else each delta is a token and the input is estimated. */
  let reported: ProviderUsage | undefined;
  let outcome: Outcome = 'client_gone';
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const stream = attempt === 1 && r.early ? r.early : openStream(r.provider, job, stop.signal, routed);
        for await (const event of stream) {
          if (event.type === 'usage') {
            const { type: _type, ...counted } = event;
            reported = counted;
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
          yield { type: 'delta', text: event.text, ...(event.logprobs ? { logprobs: event.logprobs } : {}) };
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
    const tokens = chargedTokens(reported?.outputTokens ?? delivered, maxTokens);
    outcome = delivered >= maxTokens || tokens >= maxTokens ? 'length' : 'complete';
    const finishReason = outcome === 'length' ? 'length' : calls.calls().length > 0 ? 'tool_calls' : 'stop';
    yield { type: 'end', finishReason, usage: tokenUsageOf(reported, { prompt: job.prompt, charged: tokens }) };
  } catch (err) {
    if (r.signal.aborted) {
      outcome = 'client_gone';
      return;
    }
    if (deadlinePassed) {
      outcome = 'deadline';
      const seconds = (r.deadlineMs ?? 0) / 1000;
      const sent = r.streamed ? delivered : 0;
      throw markAfterAdmission(
        new DeadlineExceededError(
          sent > 0
            ? `The deadline of ${seconds} s (Cancel-After) passed; the reply stopped after ${sent} tokens, which were charged.`
            : `The deadline of ${seconds} s (Cancel-After) passed before the reply was complete; nothing was charged.`,
        ),
      );
    }
    outcome = { failed: err };
    // The provider's own words are for the operator; the client and the record get ours.
    r.log(`generation ${job.generationId}: the provider failed the streamed chat`, err);
    throw markAfterAdmission(clientErrorOf(err));
  } finally {
    clearTimeout(limit);
    clearTimeout(deadline);
    r.signal.removeEventListener('abort', onClientGone);
    stop.abort(new Error('the run ended'));
    finishRun(r, outcome, { delivered, reported, text, toolCalls: calls.calls() });
  }
}

/**
 * What the run is charged. Complete: the provider's own count when it gave one. Cut short by the
 * client: what was handed out, never more (the provider may have produced a few more that nobody
 * saw). A deadline is a disconnect the client asked for in advance: what reached it, if it streams.
 * A failure costs nothing (spec), even when part of it reached the client.
 */
function finishRun(
  r: ReplyRun,
  outcome: Outcome,
  got: { delivered: number; reported: ProviderUsage | undefined; text: string; toolCalls: ToolCall[] },
): void {
  const cut = outcome === 'client_gone' || outcome === 'deadline';
  const sent = outcome === 'deadline' && !r.streamed ? 0 : got.delivered;
  const tokens = chargedTokens(cut ? sent : (got.reported?.outputTokens ?? got.delivered), r.maxTokens);
  const failed = typeof outcome === 'object' ? outcome.failed : undefined;
  if (outcome === 'deadline' && tokens === 0) {
    r.finish({
      ok: false,
      error: {
        code: 'timeout',
        message: 'The client’s deadline (Cancel-After) passed before the reply was complete; nothing was charged.',
        retryable: true,
      },
    });
  } else if (failed !== undefined || tokens === 0) {
    r.finish({
      ok: false,
      error:
        failed === undefined
          ? { code: 'cancelled', message: 'The client went away before the first token.', retryable: true }
          : failureOf(failed),
    });
  } else {
    void storeText(r.store, r.job.generationId, got.text).then((outputKey) =>
      r.finish({
        ok: true,
        output: {
          outputKey,
          outputText: got.text,
          ...tokenCharge(tokens, r.maxTokens, r.ratePer1kMc),
          usage: tokenUsageOf(got.reported, { prompt: r.job.prompt, charged: tokens }),
          ...(got.toolCalls.length > 0 ? { toolCalls: got.toolCalls } : {}),
          ...(r.routes.length > 0 ? { routes: r.routes } : {}),
        },
      }),
    );
  }
}
