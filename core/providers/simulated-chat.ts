import type { ChatMessage, FunctionTool, ResponseFormat } from '../generation/params';
import { parseDirectives } from './directives';
import { sampleOf, seededRandom } from './schema-sample';
import type { ChatStreamEvent } from './types';

/**
 * What the simulator answers a chat, deterministically for its conversation, as the pieces a
 * stream sends (each piece one output token): plain text, JSON for structured output, or a call
 * of one of the offered functions with arguments made from its schema. It acts as an agent's
 * model: with `tool_choice` required or a named function it calls one (the named one, else one
 * the last user turn names, else the first offered); with `auto` it calls a function only when
 * the last user turn names it (its exact name as a word) or asks with `sim:tool=<name>`, so that an
 * agent offered twenty tools is not sent into a random one; after a function's result it answers.
 */

export interface SimulatedChat {
  model: string;
  /** The conversation as one text (what the directives are read from). */
  prompt: string;
  messages: readonly ChatMessage[];
  functions: readonly FunctionTool[];
  choice: 'none' | 'auto' | 'required' | { name: string } | undefined;
  responseFormat: ResponseFormat | undefined;
  /** The reply's cap in tokens (pieces). */
  maxTokens: number;
  /** The pieces of a plain reply (`sim:tokens` of them, or the default count). */
  text: string[];
}

/** About this many characters of JSON make one streamed piece (one token). */
const JSON_PIECE_CHARS = 6;

/** The reply's events, in order, cut at `maxTokens` pieces; the caller adds the usage. */
export function simulatedReply(chat: SimulatedChat): Exclude<ChatStreamEvent, { type: 'usage' }>[] {
  const called = functionToCall(chat);
  if (called) {
    const args = JSON.stringify(
      sampleOf(called.parameters ?? { type: 'object', properties: {} }, `${chat.prompt}|${called.name}`),
    );
    const id = `call_${idOf(`${chat.prompt}|${called.name}`)}`;
    const events: Exclude<ChatStreamEvent, { type: 'usage' }>[] = [
      { type: 'tool_call', index: 0, id, name: called.name, arguments: '' },
      ...piecesOf(args).map((piece) => ({ type: 'tool_call' as const, index: 0, arguments: piece })),
    ];
    return events.slice(0, chat.maxTokens);
  }
  const text = chat.responseFormat ? piecesOf(JSON.stringify(jsonReply(chat))) : chat.text;
  return text.slice(0, chat.maxTokens).map((piece) => ({ type: 'delta' as const, text: piece }));
}

function functionToCall(chat: SimulatedChat): FunctionTool | undefined {
  const { functions, choice } = chat;
  if (functions.length === 0 || choice === 'none') return undefined;
  const byName = (name: string | undefined) => functions.find((f) => f.name === name);
  if (typeof choice === 'object') return byName(choice.name) ?? functions[0];
  const lastTurn = chat.messages.at(-1);
  const asked = lastUserText(chat.messages) ?? chat.prompt;
  const named = byName(parseDirectives(asked).tool) ?? namedIn(asked, functions);
  if (choice === 'required') return named ?? functions[0];
  // auto: a function's result is answered in words; otherwise a call only when asked for.
  if (lastTurn?.role === 'tool') return undefined;
  return named;
}

function lastUserText(messages: readonly ChatMessage[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return messages[i]!.content;
  return undefined;
}

/** The offered function whose exact name appears first in `text` as a whole word. */
function namedIn(text: string, functions: readonly FunctionTool[]): FunctionTool | undefined {
  let best: { f: FunctionTool; at: number } | undefined;
  for (const f of functions) {
    const at = text.search(new RegExp(`(?<![\\w-])${f.name.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?![\\w-])`));
    if (at >= 0 && (best === undefined || at < best.at)) best = { f, at };
  }
  return best?.f;
}

/** Structured output: an object for `json_object`, a value valid against the schema for `json_schema`. */
function jsonReply(chat: SimulatedChat): unknown {
  const format = chat.responseFormat!;
  if (format.type === 'json_schema') return sampleOf(format.schema, `${chat.model}|${chat.prompt}`);
  const words = chat.text.slice(0, 8).join('').replace(/\.$/, '');
  return { answer: words, model: chat.model };
}

/** JSON text in pieces of a few characters: joined, they are the whole text. */
function piecesOf(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += JSON_PIECE_CHARS) pieces.push(text.slice(i, i + JSON_PIECE_CHARS));
  return pieces;
}

function idOf(seed: string): string {
  const random = seededRandom(seed);
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return Array.from({ length: 24 }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
}
