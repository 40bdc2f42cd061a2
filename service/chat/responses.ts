import type pg from 'pg';
import { keepInternal } from '../../core/db/generations';
import type { GenerationRow } from '../../core/db/generations';
import { InvalidRequestError, NotFoundError } from '../../core/errors';
import { viewOf } from '../../core/generation/view';
import type { GenerationView } from '../../core/generation/view';
import type { Principal } from '../../core/accounts/principal';
import type { OutputStore } from '../../core/storage/output-store';
import type { ToolCall } from '../../core/vocabulary';
import { readOwn } from '../../core/generation/lookup';
import type {
  ChatMessage,
  ChatSampling,
  ChatTools,
  ResponseFormat,
  ResponseRecord,
} from '../../core/generation/params';

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
  /** Structured output, when asked for. */
  responseFormat: ResponseFormat | undefined;
}

/**
 * One item of a response's input, as the Responses API lists them: a message, a function call
 * the assistant made, a function's output, or a reference to an item of a stored response.
 */
export type ResponseItem =
  | { type: 'message'; role: 'system' | 'user' | 'assistant'; content: string }
  | { type: 'function_call'; call: ToolCall }
  | { type: 'function_call_output'; callId: string; output: string }
  | { type: 'item_reference'; id: string };

/** An item of a stored response with its id: what an `item_reference` names and `input_items` lists. */
export type StoredItem = Exclude<ResponseItem, { type: 'item_reference' }> & { id: string };

/**
 * Stored responses (group B's Responses API): a response is a chat generation whose internal
 * parameters carry a `ResponseRecord`. This module knows which generations are readable as
 * responses, how a `previous_response_id` or an `item_reference` continues one, which may be
 * cancelled, and what a deleted one is; money moves elsewhere.
 */
export function createResponses(deps: ResponsesDeps) {
  /** One of the account's stored responses; anything else (another account's, store: false, deleted, not a response) is not found. */
  const stored = async (
    principal: Principal,
    id: string,
    param = 'id',
  ): Promise<GenerationRow & { record: ResponseRecord }> => {
    const g = await readOwn(deps.pool, principal.accountId, id).catch((err: unknown) => {
      throw err instanceof NotFoundError ? notFound(id, param) : err;
    });
    const record = recordOf(g);
    if (!record || !record.store || record.deleted) throw notFound(id, param);
    return { ...g, record };
  };

  /** The item an `item_reference` names: an output or input item of one of the account's stored responses. */
  const referenced = async (principal: Principal, itemId: string): Promise<StoredItem> => {
    const owner = ownerOf(itemId);
    if (!owner) throw notFound(itemId, 'input', 'Item');
    const g = await stored(principal, owner).catch((err: unknown) => {
      throw err instanceof NotFoundError ? notFound(itemId, 'input', 'Item') : err;
    });
    const item = [...outputItemsOf(g), ...inputItemsOf(g)].find((i) => i.id === itemId);
    if (!item) throw notFound(itemId, 'input', 'Item');
    return item;
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
      input: { instructions?: string | undefined; previousResponseId?: string | undefined; items: ResponseItem[] },
    ): Promise<{ messages: ChatMessage[]; inputCount: number }> {
      const head: ChatMessage[] = input.instructions ? [{ role: 'system', content: input.instructions }] : [];
      const items = await Promise.all(
        input.items.map((item) =>
          item.type === 'item_reference' ? referenced(principal, item.id) : Promise.resolve(item),
        ),
      );
      const own = messagesOf(items);
      const inputCount = own.length;
      if (input.previousResponseId === undefined) return { messages: [...head, ...own], inputCount };
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
      return { messages: [...head, ...turnsOf(previous), reply, ...own], inputCount };
    },

    /** The items a stored response was given (not those of the response it continued), oldest first. */
    async inputItems(principal: Principal, id: string): Promise<StoredItem[]> {
      return inputItemsOf(await stored(principal, id));
    },

    /**
     * Deletes a stored response: from now on it reads as not found and cannot be continued or
     * referenced. The generation, its charge and its place in the account's history stay.
     */
    async delete(principal: Principal, id: string): Promise<{ id: string }> {
      const g = await stored(principal, id);
      await keepInternal(deps.pool, g.id, { response: { ...g.record, deleted: true } });
      return { id: g.id };
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

function notFound(id: string, param: string, what = 'Response'): NotFoundError {
  return new NotFoundError(`${what} '${id}' not found.`, { param });
}

/**
 * The conversation as chat turns: a function call joins the assistant turn just before it (or
 * starts one), as chat completions carry calls; a function's output is a tool turn.
 */
export function messagesOf(items: readonly Exclude<ResponseItem, { type: 'item_reference' }>[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), item.call];
      else messages.push({ role: 'assistant', content: '', toolCalls: [item.call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', toolCallId: item.callId, content: item.output });
    } else {
      messages.push({ role: item.role, content: item.content });
    }
  }
  return messages;
}

/** Item ids carry their response's: `msg_<r>` (its message), `fc_<r>_<n>` (its calls), `item_<r>_<n>` (its input). */
const suffixOf = (generationId: string): string => generationId.replace(/^gen_/, '');
export const messageItemId = (responseId: string): string => `msg_${suffixOf(responseId)}`;
export const callItemId = (responseId: string, index: number): string => `fc_${suffixOf(responseId)}_${index}`;
const inputItemId = (responseId: string, index: number): string => `item_${suffixOf(responseId)}_${index}`;

function ownerOf(itemId: string): string | undefined {
  const match = /^(?:msg|fc|item)_([0-9a-z]+)(?:_\d+)?$/.exec(itemId);
  return match ? `gen_${match[1]}` : undefined;
}

/** A succeeded response's output: its message (unless it only called functions), then its calls. */
function outputItemsOf(g: GenerationRow): StoredItem[] {
  if (g.status !== 'succeeded') return [];
  const text = g.outputText ?? '';
  const calls = g.internal.outputToolCalls ?? [];
  const message: StoredItem[] =
    text === '' && calls.length > 0
      ? []
      : [{ id: messageItemId(g.id), type: 'message', role: 'assistant', content: text }];
  return [
    ...message,
    ...calls.map((call, i): StoredItem => ({ id: callItemId(g.id, i), type: 'function_call', call })),
  ];
}

/** A response's own input: the last `inputCount` turns of its conversation, as items. */
function inputItemsOf(g: GenerationRow & { record: ResponseRecord }): StoredItem[] {
  const turns = turnsOf(g);
  const own = turns.slice(Math.max(0, turns.length - (g.record.inputCount ?? turns.length)));
  const items: StoredItem[] = [];
  for (const m of own) {
    if (m.role === 'tool') {
      items.push({ id: '', type: 'function_call_output', callId: m.toolCallId ?? '', output: m.content });
      continue;
    }
    if (m.content !== '' || !m.toolCalls?.length)
      items.push({ id: '', type: 'message', role: m.role, content: m.content });
    for (const call of m.toolCalls ?? []) items.push({ id: '', type: 'function_call', call });
  }
  return items.map((item, i) => ({ ...item, id: inputItemId(g.id, i) }));
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
    responseFormat: g.internal.responseFormat,
  };
}

/** The turns a response ran, without its own instructions (they are not carried over). */
function turnsOf(g: GenerationRow & { record: ResponseRecord }): ChatMessage[] {
  const messages: ChatMessage[] = g.internal.messages ?? [{ role: 'user', content: g.prompt }];
  return g.record.instructions && messages[0]?.role === 'system' ? messages.slice(1) : messages;
}
