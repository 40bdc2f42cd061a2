import { z } from 'zod';
import { findOpenAiChatModel } from '../../core/catalogue/models';
import { InvalidRequestError } from '../../core/errors';
import type {
  AnthropicHeaders,
  ChatMessage,
  ChatSampling,
  ChatTools,
  ResponseFormat,
} from '../../core/generation/params';
import type { GenerationRequest } from '../../service/generation/requests';
import { safeText } from '../../core/text';
import { functionName, modelId, spendCapField } from '../shared/fields';

/**
 * Anthropic's Messages API request, as its SDKs, the AI SDK's Anthropic provider and Claude Code
 * send it, parsed into the service's chat request. What the service does not serve is a 400
 * naming the field; what only tunes Anthropic's own models (thinking, effort, cache control,
 * context management) is accepted and not used.
 */

const UNSUPPORTED = 'is not supported by this service';
const cacheControl = z.unknown().optional().describe('Accepted and ignored');

const textBlock = z.object({
  type: z.literal('text'),
  text: safeText({ label: 'text' }),
  cache_control: cacheControl,
  citations: z.unknown().optional(),
});
const toolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string().min(1).max(200),
  name: functionName,
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControl,
});
const toolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1).max(200),
  content: z
    .union([
      safeText({ max: 1_000_000 }),
      z.array(textBlock, { error: `tool_result content: only text blocks ${UNSUPPORTED.replace('is', 'are')}` }),
    ])
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControl,
});
// Thinking a client hands back is not sent on: the service's models answer without it.
const thinkingBlock = z.looseObject({ type: z.enum(['thinking', 'redacted_thinking']) });
const block = z.discriminatedUnion('type', [textBlock, toolUseBlock, toolResultBlock, thinkingBlock], {
  error: `content blocks: text, tool_use, tool_result and thinking are supported; images, documents and server tools ${UNSUPPORTED.replace('is', 'are')}`,
});

const message = z.object({
  role: z
    .enum(['user', 'assistant', 'system'])
    .describe('system: a mid-conversation system turn (Claude Code sends them)'),
  content: z.union([safeText({ label: 'content' }), z.array(block).max(1000)]),
});

const customTool = z.object({
  type: z
    .literal('custom', {
      error: `tools: only custom tools are supported; server tools ${UNSUPPORTED.replace('is', 'are')}`,
    })
    .optional(),
  name: functionName,
  description: safeText({ max: 100_000 }).optional(),
  input_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the input'),
  strict: z.boolean().optional(),
  cache_control: cacheControl,
  defer_loading: z.boolean().optional().describe('Accepted and ignored'),
  input_examples: z.array(z.unknown()).optional().describe('Accepted and ignored'),
});

const jsonSchemaFormat = z.object({
  type: z.literal('json_schema', { error: `output format: only json_schema ${UNSUPPORTED}` }),
  schema: z.record(z.string(), z.unknown()),
});

export const MESSAGE_FIELDS = [
  'model',
  'messages',
  'max_tokens',
  'system',
  'stop_sequences',
  'stream',
  'temperature',
  'top_p',
  'top_k',
  'metadata',
  'tools',
  'tool_choice',
  'thinking',
  'output_config',
  'output_format',
  'context_management',
  'service_tier',
  'container',
  'mcp_servers',
  'max_credits',
] as const;

export const messagesBody = z
  .object({
    model: modelId.describe(
      'A chat id of GET /api/v1/models (claude-sonnet, gpt-5.5…); Anthropic’s own ids (claude-sonnet-4-5…) run as their tier',
    ),
    messages: z.array(message).min(1).max(10_000),
    max_tokens: z
      .number()
      .int()
      .min(1)
      .describe('Longest reply in tokens; the hold covers it, at most the model’s largest output'),
    system: z.union([safeText({ max: 1_000_000 }), z.array(textBlock)]).optional(),
    stop_sequences: z
      .array(safeText({ max: 200 }))
      .max(16)
      .optional(),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(1).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional().describe('Accepted and ignored'),
    metadata: z
      .object({ user_id: z.string().max(10_000).nullish() })
      .optional()
      .describe('Accepted and ignored'),
    tools: z.array(customTool).max(1000).optional(),
    tool_choice: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
        z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
        z.object({ type: z.literal('none') }),
        z.object({ type: z.literal('tool'), name: functionName, disable_parallel_tool_use: z.boolean().optional() }),
      ])
      .optional(),
    thinking: z.unknown().optional().describe('Accepted and ignored: replies carry no thinking blocks'),
    output_config: z
      .object({ format: jsonSchemaFormat.nullish(), effort: z.string().max(20).nullish() })
      .optional()
      .describe('format: structured output (a JSON Schema); effort is accepted and ignored'),
    output_format: jsonSchemaFormat.nullish().describe('The earlier spelling of output_config.format'),
    context_management: z.unknown().optional().describe('Accepted and ignored'),
    service_tier: z.enum(['auto', 'standard_only']).optional().describe('Accepted and ignored'),
    container: z.never({ error: `container ${UNSUPPORTED}` }).optional(),
    mcp_servers: z.never({ error: `mcp_servers ${UNSUPPORTED}` }).optional(),
    max_credits: spendCapField('max_credits'),
  })
  .meta({
    id: 'AnthropicMessagesRequest',
    examples: [{ model: 'claude-haiku', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello' }] }],
  });

export type MessagesBody = z.infer<typeof messagesBody>;

export const countTokensBody = messagesBody
  .omit({ max_tokens: true, stream: true, max_credits: true })
  .meta({ id: 'AnthropicCountTokensRequest' });

/**
 * The catalogue id a model name runs as: a catalogue chat id as it is, and Anthropic's own ids
 * (`claude-sonnet-4-5-20250929`, `claude-3-5-haiku-latest`) as the catalogue's model of their tier.
 */
export function catalogueModelOf(model: string): string {
  if (findOpenAiChatModel(model)) return model;
  const tier = /^claude-(?:[\d.]+-)*(opus|sonnet|haiku|fable)(?:-[\w.]+)*$/.exec(model)?.[1];
  return tier ? `claude-${tier}` : model;
}

/** `max_tokens` within what the model produces at most: Anthropic's clients ask for their model's own limit. */
export function maxTokensFor(model: string, asked: number): number {
  const cap = findOpenAiChatModel(model)?.maxOutputTokens;
  return cap === undefined ? asked : Math.min(asked, cap);
}

type Block = z.infer<typeof block>;

const textOf = (blocks: readonly Block[]): string =>
  blocks.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n\n');

/**
 * The conversation as chat turns: the system prompt first; a user turn's tool results become tool
 * turns (before its text, as Anthropic orders them), an assistant turn's tool_use blocks its calls.
 */
export function messagesOf(body: Pick<MessagesBody, 'system' | 'messages'>): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = typeof body.system === 'string' ? body.system : textOf(body.system ?? []);
  if (system !== '') out.push({ role: 'system', content: system });
  for (const m of body.messages) {
    const blocks: Block[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (m.role === 'assistant') {
      const calls = blocks.flatMap((b) =>
        b.type === 'tool_use' ? [{ id: b.id, name: b.name, arguments: JSON.stringify(b.input) }] : [],
      );
      out.push({ role: 'assistant', content: textOf(blocks), ...(calls.length > 0 ? { toolCalls: calls } : {}) });
      continue;
    }
    for (const b of blocks) {
      if (b.type !== 'tool_result') continue;
      const content = typeof b.content === 'string' ? b.content : textOf(b.content ?? []);
      out.push({ role: 'tool', toolCallId: b.tool_use_id, content: b.is_error ? `Error: ${content}` : content });
    }
    const text = textOf(blocks);
    if (text !== '' || !blocks.some((b) => b.type === 'tool_result')) out.push({ role: m.role, content: text });
  }
  if (out.at(-1)?.role === 'assistant' && !out.at(-1)?.toolCalls)
    throw new InvalidRequestError(
      'messages: a final assistant turn (a prefill to continue) is not supported by this service.',
      'messages',
    );
  return out;
}

export function toolsOf(body: Pick<MessagesBody, 'tools' | 'tool_choice'>): ChatTools | undefined {
  if (!body.tools?.length) return undefined;
  const c = body.tool_choice;
  return {
    functions: body.tools.map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.input_schema,
      strict: t.strict,
    })),
    choice: c === undefined ? undefined : c.type === 'any' ? 'required' : c.type === 'tool' ? { name: c.name } : c.type,
    parallel: c && 'disable_parallel_tool_use' in c && c.disable_parallel_tool_use ? false : undefined,
  };
}

export function responseFormatOf(
  body: Pick<MessagesBody, 'output_config' | 'output_format'>,
): ResponseFormat | undefined {
  const format = body.output_config?.format ?? body.output_format;
  return format ? { type: 'json_schema', name: 'output', schema: format.schema, strict: true } : undefined;
}

export function samplingOf(body: MessagesBody): ChatSampling {
  return {
    ...(body.temperature === undefined ? {} : { temperature: body.temperature }),
    ...(body.top_p === undefined ? {} : { top_p: body.top_p }),
    ...(body.stop_sequences?.length ? { stop: body.stop_sequences } : {}),
  };
}

/** About four characters a token, as the service counts a prompt it has not run: system, turns and tools. */
export function countTokens(body: Pick<MessagesBody, 'system' | 'messages' | 'tools'>): number {
  const text = messagesOf(body).map((m) => `${m.role}: ${m.content}${m.toolCalls ? JSON.stringify(m.toolCalls) : ''}`);
  const tools = body.tools ? JSON.stringify(body.tools) : '';
  return Math.ceil((text.join('\n').length + tools.length) / 4);
}

/** The chat a Messages body asks for, whether it came alone or as one request of a Message Batch. */
export function chatRequestOf(
  body: MessagesBody,
  anthropicHeaders: AnthropicHeaders,
): Extract<GenerationRequest, { kind: 'chat' }> {
  const model = catalogueModelOf(body.model);
  return {
    kind: 'chat',
    model,
    messages: messagesOf(body),
    maxTokens: maxTokensFor(model, body.max_tokens),
    sampling: samplingOf(body),
    tools: toolsOf(body),
    responseFormat: responseFormatOf(body),
    anthropicHeaders,
  };
}
