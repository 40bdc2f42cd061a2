import type { ToolCall } from '../vocabulary';
import type { ChatStreamEvent } from './types';
import type { ChatMessage, ChatTools, ResponseFormat } from '../generation/params';

/**
 * Function calls arrive in pieces (OpenAI's streamed `tool_calls` deltas): the first piece of a
 * call names it, the rest carry its arguments. This puts them back together, in call order.
 */
export function toolCallAssembler() {
  const calls: { id: string; name: string; arguments: string }[] = [];
  return {
    add(piece: Extract<ChatStreamEvent, { type: 'tool_call' }>): void {
      const call = (calls[piece.index] ??= { id: '', name: '', arguments: '' });
      if (piece.id) call.id = piece.id;
      if (piece.name) call.name += piece.name;
      call.arguments += piece.arguments;
    },
    /** The `index`th call as far as it has arrived. */
    at: (index: number): ToolCall => calls[index] ?? { id: '', name: '', arguments: '' },
    calls: (): ToolCall[] => calls.filter((c) => c !== undefined),
  };
}

/** The chat-completions form of a chat's messages and functions, as an OpenAI-compatible upstream takes them. */
export function openAiChatMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => {
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    if (m.toolCalls?.length) {
      return {
        role: m.role,
        content: m.content === '' ? null : m.content,
        tool_calls: m.toolCalls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      };
    }
    return { role: m.role, content: m.content };
  });
}

export function openAiTools(tools: ChatTools): Record<string, unknown> {
  const choice = tools.choice;
  return {
    tools: tools.functions.map((f) => ({
      type: 'function',
      function: {
        name: f.name,
        ...(f.description ? { description: f.description } : {}),
        ...(f.parameters ? { parameters: f.parameters } : {}),
        ...(f.strict === undefined ? {} : { strict: f.strict }),
      },
    })),
    ...(choice === undefined
      ? {}
      : { tool_choice: typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } } }),
    ...(tools.parallel === undefined ? {} : { parallel_tool_calls: tools.parallel }),
  };
}

/** Structured output as chat completions take it (`response_format`). */
export function openAiResponseFormat(format: ResponseFormat): Record<string, unknown> {
  if (format.type === 'json_object') return { type: 'json_object' };
  return {
    type: 'json_schema',
    json_schema: {
      name: format.name,
      schema: format.schema,
      ...(format.description === undefined ? {} : { description: format.description }),
      ...(format.strict === undefined ? {} : { strict: format.strict }),
    },
  };
}
