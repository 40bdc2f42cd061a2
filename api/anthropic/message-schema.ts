import { z } from 'zod';

/** Anthropic's Message as this door answers it (api/shared/anthropic/message.ts builds it), for the OpenAPI document. */

const usage = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int().describe('What was charged for, at the model’s rate per 1,000'),
  cache_creation_input_tokens: z.number().int(),
  cache_read_input_tokens: z.number().int(),
  cache_creation: z.null(),
  inference_geo: z.null(),
  output_tokens_details: z.null(),
  server_tool_use: z.null(),
  service_tier: z.enum(['standard', 'batch']).describe('batch: a Message Batch’s request'),
  speed: z.null(),
});
export const message = z
  .object({
    id: z.string().describe('The generation id (also readable at /api/v1/generations/{id})'),
    type: z.literal('message'),
    role: z.literal('assistant'),
    model: z.string().describe('The catalogue model that answered'),
    content: z.array(
      z.union([
        z.object({ type: z.literal('text'), text: z.string(), citations: z.null() }),
        z.object({
          type: z.literal('tool_use'),
          id: z.string(),
          name: z.string(),
          input: z.unknown(),
          caller: z.object({ type: z.literal('direct') }),
        }),
      ]),
    ),
    container: z.null(),
    diagnostics: z.null(),
    stop_details: z.null(),
    stop_reason: z.enum(['end_turn', 'max_tokens', 'tool_use']),
    stop_sequence: z.null(),
    usage,
  })
  .meta({ id: 'AnthropicMessage' });
