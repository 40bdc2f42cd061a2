import type pg from 'pg';
import type { GenerationRow } from '../../core/db/generations';
import { InvalidRequestError, NotFoundError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import type { ToolCall } from '../../core/vocabulary';
import { readOwn } from '../generation/lookup';
import type { ChatMessage, ChatSampling, ChatTools, ResponseRecord } from '../../core/generation/params';

export interface ResponsesDeps {
  pool: pg.Pool;
  store: OutputStore;
  /** The service's cancel (service/generation/cancel.ts): the workflow fails the run and the ledger releases its hold. */
  cancel: (principal: Principal, id: string) => Promise<GenerationView>;
}

/**
 * A stored response: the generation as every door may show it, and what the Responses API shows of
 * it besides, which the service keeps with the generation's internal parameters.
 */
export interface StoredResponse extends GenerationView {
  record: ResponseRecord;
  sampling: ChatSampling;
  /** The functions the request offered. */
  tools: ChatTools | undefined;
  /** The functions the reply called. */
  toolCalls: ToolCall[];
}

/**
 * Stored responses (group B's Responses API): a response is a chat generation whose internal
 * parameters carry a `ResponseRecord`. This module knows which generations are readable as
 * responses, how a `previous_response_id` continues one, and which may be cancelled; money moves elsewhere.
 */
export function createResponses(deps: ResponsesDeps) {
  /** One of the account's stored responses; anything else (another account's, store: false, not a response) is not found. */
  const stored = async (
    principal: Principal,
    id: string,
    param = 'id',
  ): Promise<GenerationRow & { record: ResponseRecord }> => {
    const g = await readOwn(deps.pool, principal.accountId, id).catch((err: unknown) => {
      throw err instanceof NotFoundError ? notFound(id, param) : err;
    });
    const record = recordOf(g);
    if (!record || !record.store) throw notFound(id, param);
    return { ...g, record };
  };

  return {
    /** A stored response. */
    async get(principal: Principal, id: string): Promise<StoredResponse> {
      const g = await stored(principal, id);
      return responseOf(g, await viewOf(g, deps.store));
    },

    /**
     * The conversation a new response runs: its instructions (a previous response's are not
     * carried over, as OpenAI's API does), then the previous response's turns and its reply, then
     * the new input. Only a completed response of the same account can be continued.
     */
    async conversation(
      principal: Principal,
      input: { instructions?: string | undefined; previousResponseId?: string | undefined; messages: ChatMessage[] },
    ): Promise<ChatMessage[]> {
      const head: ChatMessage[] = input.instructions ? [{ role: 'system', content: input.instructions }] : [];
      if (input.previousResponseId === undefined) return [...head, ...input.messages];
      const previous = await stored(principal, input.previousResponseId, 'previous_response_id');
      if (previous.status !== 'succeeded') {
        throw new InvalidRequestError(
          `previous_response_id: response '${previous.id}' is ${previous.status}; only a completed response can be continued.`,
          'previous_response_id',
        );
      }
      const calls = previous.internal.outputToolCalls ?? [];
      const reply: ChatMessage = {
        role: 'assistant',
        content: previous.outputText ?? '',
        ...(calls.length > 0 ? { toolCalls: calls } : {}),
      };
      return [...head, ...turnsOf(previous), reply, ...input.messages];
    },

    /** Stops a background response: its hold is released, nothing charged. Only background responses can be cancelled (OpenAI's rule). */
    async cancel(principal: Principal, id: string): Promise<StoredResponse> {
      const g = await stored(principal, id);
      if (!g.record.background)
        throw new InvalidRequestError(
          `Only responses created with background: true can be cancelled; '${id}' was not.`,
          'id',
        );
      return responseOf(g, await deps.cancel(principal, id));
    },
  };
}

export type Responses = ReturnType<typeof createResponses>;

function notFound(id: string, param: string): NotFoundError {
  return new NotFoundError(`Response '${id}' not found.`, { param });
}

function recordOf(g: GenerationRow): ResponseRecord | undefined {
  return g.kind === 'chat' ? g.internal.response : undefined;
}

function responseOf(g: GenerationRow & { record: ResponseRecord }, view: GenerationView): StoredResponse {
  return {
    ...view,
    record: g.record,
    sampling: g.internal.sampling ?? {},
    tools: g.internal.tools,
    toolCalls: g.internal.outputToolCalls ?? [],
  };
}

/** The turns a response ran, without its own instructions (they are not carried over). */
function turnsOf(g: GenerationRow & { record: ResponseRecord }): ChatMessage[] {
  const messages: ChatMessage[] = g.internal.messages ?? [{ role: 'user', content: g.prompt }];
  return g.record.instructions && messages[0]?.role === 'system' ? messages.slice(1) : messages;
}
