import { z } from 'zod';
import { textFormat } from './responses';

// The Response object group B answers (create, retrieve, cancel, and inside stream events), as
// OpenAI's API describes it, for the routes' OpenAPI description.

const outputText = z.object({
  type: z.literal('output_text'),
  text: z.string(),
  annotations: z.array(z.never()),
  logprobs: z.array(z.never()),
});
const outputMessage = z.object({
  id: z.string(),
  type: z.literal('message'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  role: z.literal('assistant'),
  content: z.array(outputText),
});
const outputFunctionCall = z.object({
  id: z.string(),
  type: z.literal('function_call'),
  status: z.enum(['in_progress', 'completed', 'incomplete']),
  call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
export const responseSchema = z
  .object({
    id: z.string().describe('The generation id (also readable at /api/v1/generations/{id})'),
    object: z.literal('response'),
    created_at: z.number().int(),
    status: z.enum(['queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled']),
    background: z.boolean(),
    completed_at: z.number().int().nullable(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    incomplete_details: z.object({ reason: z.literal('max_output_tokens') }).nullable(),
    instructions: z.string().nullable(),
    max_output_tokens: z.number().int().nullable(),
    metadata: z.record(z.string(), z.string()),
    model: z.string().describe('The model that answered'),
    output: z.array(z.union([outputMessage, outputFunctionCall])),
    output_text: z.string(),
    parallel_tool_calls: z.boolean(),
    previous_response_id: z.string().nullable(),
    store: z.boolean(),
    temperature: z.number(),
    top_p: z.number(),
    presence_penalty: z.number(),
    frequency_penalty: z.number(),
    top_logprobs: z.number().int(),
    reasoning: z.null(),
    max_tool_calls: z.null(),
    service_tier: z.literal('default'),
    safety_identifier: z.null(),
    prompt_cache_key: z.null(),
    text: z.object({ format: textFormat }),
    tool_choice: z.union([
      z.enum(['none', 'auto', 'required']),
      z.object({ type: z.literal('function'), name: z.string() }),
    ]),
    tools: z.array(
      z.object({
        type: z.literal('function'),
        name: z.string(),
        description: z.string().nullable(),
        parameters: z.record(z.string(), z.unknown()).nullable(),
        strict: z.boolean().nullable(),
      }),
    ),
    truncation: z.literal('disabled'),
    usage: z
      .object({
        input_tokens: z
          .number()
          .int()
          .describe('All input tokens, those read from or written to the prompt cache included'),
        input_tokens_details: z.object({
          cached_tokens: z.number().int().describe('Input read from the prompt cache'),
          cache_write_tokens: z.number().int().describe('Input written to the prompt cache'),
        }),
        output_tokens: z.number().int().describe('What was charged for, at the model’s rate per 1,000'),
        output_tokens_details: z.object({
          reasoning_tokens: z.number().int().describe('Output tokens the model reasoned with: part of output_tokens'),
        }),
        total_tokens: z.number().int(),
      })
      .nullable()
      .describe('Once the response has ended; null before'),
  })
  .meta({ id: 'Response' });
