import { z } from 'zod';
import { AUTO_CHAT_MODEL_ID, findChatModel, findImageModel, findVideoModel } from './catalogue';
import type { Kind } from './catalogue';
import { PermissionError } from './errors';
import { newId } from './ids';
import { capChatPrompt, quoteChat, quoteImage, quoteVideo } from './pricing';
import { assertPromptAllowed } from './safety';
import type { GenerationWorkflowInput } from '../workflows/definitions';

/** The body of group C's POST /api/generate: one schema for validation and for the types. */
const common = {
  prompt: z.string().trim().min(1, 'prompt must not be empty'),
  model: z.string().trim().min(1).max(100).optional(),
  quality: z.string().max(50).optional(),
  aspect: z.string().max(20).optional(),
  // Accepted and ignored by design: the model's default resolution is used, with its price.
  resolution: z.unknown().optional(),
};

const MAX_MEDIA_PROMPT_CHARS = 10_000;
const mediaPrompt = common.prompt.max(MAX_MEDIA_PROMPT_CHARS, `prompt must be at most ${MAX_MEDIA_PROMPT_CHARS} characters`);

export const legacyGenerateBody = z.discriminatedUnion('kind', [
  z.object({ ...common, kind: z.literal('image'), prompt: mediaPrompt }),
  z.object({ ...common, kind: z.literal('video'), prompt: mediaPrompt, seconds: z.number().finite().optional() }),
  // Chat prompts of any length are accepted and capped server-side to what the model takes.
  z.object({ ...common, kind: z.literal('chat') }),
], { error: () => "kind must be one of 'image', 'video', 'chat'" });

export type LegacyGenerateBody = z.infer<typeof legacyGenerateBody>;

/** Who asks: the key's account and what the key may do. */
export interface Principal {
  accountId: string;
  apiKeyId: string | null;
  scopes: readonly string[];
  /** A model allow-list, or null for every model. */
  models: readonly string[] | null;
}

export function assertScope(principal: Principal, kind: Kind): void {
  if (!principal.scopes.includes(kind)) {
    throw new PermissionError(`This API key lacks the '${kind}' scope (generate:${kind}).`, { param: 'kind' });
  }
}

/** A key's allow-list may name a model by any of its ids; compare canonical ids. */
export function assertModelAllowed(principal: Principal, kind: Kind, model: string): void {
  if (principal.models === null) return;
  const canonical = (id: string): string => {
    const found = kind === 'image' ? findImageModel(id) : kind === 'video' ? findVideoModel(id) : findChatModel(id);
    return found?.id ?? id;
  };
  if (!principal.models.some((m) => canonical(m) === model)) {
    throw new PermissionError(`This API key has no permission for model '${model}'.`, { param: 'model' });
  }
}

/**
 * Turns a valid request into the priced input of a generation workflow, refusing it as the spec
 * orders: scope, then the safety guard (before pricing), then the price, then the key's models.
 */
export function toWorkflowInput(body: LegacyGenerateBody, principal: Principal): GenerationWorkflowInput {
  assertScope(principal, body.kind);
  const base = { generationId: newId('gen'), accountId: principal.accountId, apiKeyId: principal.apiKeyId, kind: body.kind };
  switch (body.kind) {
    case 'image': {
      assertPromptAllowed(body.prompt);
      const quote = quoteImage(body);
      assertModelAllowed(principal, 'image', quote.model);
      return { ...base, model: quote.model, prompt: body.prompt, params: { ...quote.params }, quoteMc: quote.priceMc };
    }
    case 'video': {
      assertPromptAllowed(body.prompt);
      const quote = quoteVideo(body);
      assertModelAllowed(principal, 'video', quote.model);
      return { ...base, model: quote.model, prompt: body.prompt, params: { ...quote.params }, quoteMc: quote.priceMc };
    }
    case 'chat': {
      const quote = quoteChat(body);
      assertModelAllowed(principal, 'chat', quote.model);
      const capped = capChatPrompt(body.prompt, quote.params.maxPromptChars);
      return {
        ...base,
        model: quote.model,
        prompt: capped.prompt,
        params: { requestedModel: quote.requestedModel, promptTruncated: capped.truncated },
        quoteMc: quote.priceMc,
        // While the allowance lasts, the automatically chosen model answers for free.
        freeChat: { model: AUTO_CHAT_MODEL_ID },
      };
    }
  }
}
