import { AUTO_CHAT_MODEL_ID } from '../core/catalogue';
import type { Door, UpscaleScale } from '../core/catalogue';
import { newId } from '../core/ids';
import { assertModelAllowed, assertScope } from '../core/principal';
import type { Principal } from '../core/principal';
import { capChatMessages, quoteChat, quoteImage, quoteUpscale, quoteVideo } from '../core/pricing';
import { assertPromptAllowed } from '../core/safety';
import type { GenerationWorkflowInput } from '../workflows/definitions';

/**
 * The one request every door parses its own body into (group C's camelCase, group A's
 * snake_case, later group B and MCP). The service prices, admits and runs only this.
 */
export type ChatRole = 'system' | 'user' | 'assistant';
export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export type GenerationRequest =
  | { kind: 'image'; model?: string | undefined; prompt: string; quality?: string | undefined; aspect?: string | undefined; width?: number | undefined; height?: number | undefined }
  | { kind: 'video'; model?: string | undefined; prompt: string; quality?: string | undefined; aspect?: string | undefined; seconds?: number | undefined }
  | { kind: 'chat'; model?: string | undefined; messages: ChatMessage[]; maxTokens?: number | undefined }
  | { kind: 'upscale'; model?: string | undefined; imageUrl: string; scale: UpscaleScale; prompt?: string | undefined };

/** A priced request: everything a generation workflow needs, before its hold is placed. */
export type PricedGeneration = Omit<GenerationWorkflowInput, 'admitted'>;

/**
 * Turns a valid request into the priced input of a generation, refusing it as the spec orders:
 * scope, then the safety guard (before pricing), then the price, then the key's models.
 * Upscale inputs are fetched and checked by the service afterwards (they need I/O).
 */
export function priceRequest(request: GenerationRequest, principal: Principal, door: Door): PricedGeneration {
  assertScope(principal, request.kind);
  const base = { generationId: newId('gen'), accountId: principal.accountId, apiKeyId: principal.apiKeyId, kind: request.kind };
  switch (request.kind) {
    case 'image': {
      assertPromptAllowed(request.prompt);
      const quote = quoteImage(request);
      assertModelAllowed(principal, 'image', quote.model);
      return { ...base, model: quote.model, prompt: request.prompt, params: { ...quote.params }, quoteMc: quote.priceMc };
    }
    case 'video': {
      assertPromptAllowed(request.prompt);
      const quote = quoteVideo(request, door);
      assertModelAllowed(principal, 'video', quote.model);
      return { ...base, model: quote.model, prompt: request.prompt, params: { ...quote.params }, quoteMc: quote.priceMc };
    }
    case 'chat': {
      const quote = quoteChat(request);
      assertModelAllowed(principal, 'chat', quote.model);
      const capped = capChatMessages(request.messages, quote.params.maxPromptChars);
      return {
        ...base,
        model: quote.model,
        prompt: capped.prompt,
        params: {
          requestedModel: quote.requestedModel,
          promptTruncated: capped.truncated,
          ...(request.maxTokens === undefined ? {} : { maxTokens: request.maxTokens }),
          // A conversation is kept whole for providers that take one; a lone prompt needs no copy.
          ...(capped.messages.length > 1 || capped.messages[0]?.role !== 'user' ? { messages: capped.messages } : {}),
        },
        quoteMc: quote.priceMc,
        // While the allowance lasts, the automatically chosen model answers for free.
        freeChat: { model: AUTO_CHAT_MODEL_ID },
      };
    }
    case 'upscale': {
      const quote = quoteUpscale(request);
      assertModelAllowed(principal, 'upscale', quote.model);
      // An upscaler may take guidance text; the simulator reads its test directives there.
      const prompt = request.prompt ?? '';
      if (prompt) assertPromptAllowed(prompt);
      return { ...base, model: quote.model, prompt, params: { ...quote.params, imageUrl: request.imageUrl }, quoteMc: quote.priceMc };
    }
  }
}
