import { AUTO_CHAT_MODEL_ID, findImageModel, IMAGE_MODELS } from '../../core/catalogue/models';
import type { UpscaleScale } from '../../core/generation/params';
import { InvalidRequestError } from '../../core/errors';
import { newId } from '../../core/ids';
import { PLAN_FAIRNESS_WEIGHTS } from '../../core/plans';
import { assertModelAllowed, assertScope } from '../../core/accounts/principal';
import type { Principal } from '../../core/accounts/principal';
import { capChatMessages, quoteChat, quoteImage, quoteUpscale, quoteVideo } from '../../core/catalogue/pricing';
import { assertPromptAllowed } from '../../core/generation/safety';
import type { ProviderFeature } from '../../core/providers/types';
import type {
  AnthropicHeaders,
  ChatMessage,
  ChatSampling,
  ChatTools,
  InternalParams,
  ResponseFormat,
  ResponseRecord,
} from '../../core/generation/params';
import type { PricedGeneration } from '../../core/generation/workflow-input';
import type { Door } from '../../core/vocabulary';

/**
 * The one request every door parses its own body into (group C's camelCase, group A's
 * snake_case, later group B and MCP). The service prices, admits and runs only this.
 */
export type GenerationRequest =
  | {
      kind: 'image';
      model?: string | undefined;
      prompt: string;
      quality?: string | undefined;
      aspect?: string | undefined;
      width?: number | undefined;
      height?: number | undefined;
      /** Group B's `quality: "hd"`: the model's high variant, or twice its price (DESIGN §6). */
      hd?: boolean | undefined;
      /** The encoding of the answer (OpenAI's `output_format`): the run gives it or fails uncharged. */
      outputFormat?: 'png' | 'jpeg' | 'webp' | undefined;
      /** An edit: the images to edit (the first is edited, the others guide it) and where (the mask's transparent pixels). */
      edit?: { images: EditInput[]; mask?: EditInput | undefined } | undefined;
    }
  | {
      kind: 'video';
      model?: string | undefined;
      prompt: string;
      quality?: string | undefined;
      aspect?: string | undefined;
      seconds?: number | undefined;
      /** A reference frame (image-to-video), fetched and checked before the hold like an upscale input. */
      imageUrl?: string | undefined;
      /** The succeeded video this one remixes (service/generation/remix.ts), kept in its parameters. */
      remixedFrom?: string | undefined;
      /** The succeeded video this one continues or edits (service/generation/video-derivations.ts). */
      derivedFrom?: VideoSource | undefined;
    }
  | {
      kind: 'chat';
      model?: string | undefined;
      messages: ChatMessage[];
      maxTokens?: number | undefined;
      sampling?: ChatSampling | undefined;
      /** A Responses API request: what it keeps beside the reply. */
      response?: ResponseRecord | undefined;
      /** Functions the model may call: served only where the model's provider passes them on. */
      tools?: ChatTools | undefined;
      /** Structured output: served only where the model's provider takes it. */
      responseFormat?: ResponseFormat | undefined;
      /** The Anthropic door's protocol headers, for an Anthropic upstream. */
      anthropicHeaders?: AnthropicHeaders | undefined;
    }
  | { kind: 'upscale'; model?: string | undefined; imageUrl: string; scale: UpscaleScale; prompt?: string | undefined };

/**
 * A succeeded video another is made from: continued by the request's `seconds` (an extension), or
 * edited at its length. `seconds` and `outputKey` are the source's own: its length and its file.
 */
export interface VideoSource {
  how: 'extension' | 'edit';
  id: string;
  seconds: number;
  outputKey: string;
}

/** An edit's input: a URL, bytes the request carried, or the output of one of the account's image generations. */
export type EditInput = { url: string } | { file: Buffer } | { generation: string };

/**
 * Turns a valid request into the priced input of a generation, refusing it as the spec orders:
 * scope, then the safety guard (before pricing), then the price, then the key's models.
 * Upscale inputs are fetched and checked by the service afterwards (they need I/O).
 */
export function priceRequest(
  request: GenerationRequest,
  principal: Principal,
  door: Door,
  serves: Serves = servesNothing,
): PricedGeneration {
  const priced = priceByKind(request, principal, door, serves);
  if (principal.plan === undefined) return priced;
  // The account's share of the task queues while it runs, recorded with it so that every start
  // (the API's, a batch line's, the reconciler's) gives the same.
  return { ...priced, internal: { ...priced.internal, fairnessWeight: PLAN_FAIRNESS_WEIGHTS[principal.plan] } };
}

function priceByKind(request: GenerationRequest, principal: Principal, door: Door, serves: Serves): PricedGeneration {
  assertScope(principal, request.kind);
  const base = {
    generationId: newId('gen'),
    accountId: principal.accountId,
    apiKeyId: principal.apiKeyId,
    kind: request.kind,
  };
  switch (request.kind) {
    case 'image': {
      assertPromptAllowed(request.prompt);
      const quote = quoteImage(request);
      assertModelAllowed(principal, 'image', quote.model);
      const edit = request.edit;
      if (edit && !findImageModel(quote.model)?.edits)
        throw new InvalidRequestError(
          `model: ${quote.model} does not edit images; models that do: ${IMAGE_MODELS.filter((m) => m.edits)
            .map((m) => m.id)
            .join(', ')}.`,
          'model',
        );
      return {
        ...base,
        model: quote.model,
        prompt: request.prompt,
        params: {
          ...quote.params,
          ...(request.outputFormat ? { outputFormat: request.outputFormat } : {}),
          ...(edit ? { inputImages: edit.images.length, ...(edit.mask ? { masked: true as const } : {}) } : {}),
        },
        internal: {},
        quoteMc: quote.priceMc,
      };
    }
    case 'video': {
      assertPromptAllowed(request.prompt);
      const source = request.derivedFrom;
      const quote = quoteVideo(request, door, source?.how === 'edit' ? 'as-given' : 'clamped');
      assertModelAllowed(principal, 'video', quote.model);
      if (source) assertDerivationServed(source, quote.model, serves);
      const reference = request.imageUrl === undefined ? {} : { imageUrl: request.imageUrl };
      const remix = request.remixedFrom === undefined ? {} : { remixedFrom: request.remixedFrom };
      return {
        ...base,
        model: quote.model,
        prompt: request.prompt,
        params: {
          ...quote.params,
          ...reference,
          ...remix,
          ...(source ? derivedParams(source, quote.params.seconds) : {}),
        },
        internal: source ? { sourceVideoKey: source.outputKey } : {},
        quoteMc: quote.priceMc,
      };
    }
    case 'chat': {
      const quote = quoteChat(request, door);
      assertModelAllowed(principal, 'chat', quote.model);
      assertFeaturesServed(request, quote.model, serves);
      const capped = capChatMessages(request.messages, quote.params.maxPromptChars);
      const rate = quote.params.ratePer1kMc;
      const sampling = Object.entries(request.sampling ?? {}).filter(([, v]) => v !== undefined);
      const maxTokens = quote.params.maxTokens ?? request.maxTokens;
      const internal: InternalParams = {
        // Per-token models: the rate the settle charges (the hold covers maxTokens at it).
        ...(rate === undefined ? {} : { ratePer1kMc: rate }),
        ...(sampling.length > 0 ? { sampling: Object.fromEntries(sampling) } : {}),
        ...(request.response ? { response: request.response } : {}),
        ...(request.tools ? { tools: request.tools } : {}),
        ...(request.responseFormat ? { responseFormat: request.responseFormat } : {}),
        ...(request.anthropicHeaders ? { anthropicHeaders: request.anthropicHeaders } : {}),
        // A conversation is kept whole for providers that take one; a lone prompt needs no copy.
        ...(capped.messages.length > 1 || capped.messages[0]?.role !== 'user' ? { messages: capped.messages } : {}),
      };
      const perToken = rate !== undefined;
      return {
        ...base,
        model: quote.model,
        prompt: capped.prompt,
        params: {
          requestedModel: quote.requestedModel,
          promptTruncated: capped.truncated,
          ...(maxTokens === undefined ? {} : { maxTokens }),
        },
        internal,
        quoteMc: quote.priceMc,
        // While the allowance lasts, the automatically chosen model answers for free. Per-token
        // models (group B's) are never swapped for it: the client asked for that model by name.
        ...(perToken ? {} : { freeChat: { model: AUTO_CHAT_MODEL_ID } }),
      };
    }
    case 'upscale': {
      const quote = quoteUpscale(request);
      assertModelAllowed(principal, 'upscale', quote.model);
      // An upscaler may take guidance text; the simulator reads its test directives there.
      const prompt = request.prompt ?? '';
      if (prompt) assertPromptAllowed(prompt);
      return {
        ...base,
        model: quote.model,
        prompt,
        params: { ...quote.params, imageUrl: request.imageUrl },
        internal: {},
        quoteMc: quote.priceMc,
      };
    }
  }
}

/** What a video made from another shows of its source: which one, and (an extension) the whole file's length. */
function derivedParams(source: VideoSource, seconds: number) {
  return source.how === 'extension'
    ? { extendedFrom: source.id, stitchedSeconds: source.seconds + seconds }
    : { editedFrom: source.id };
}

/** An extension or edit is refused before anything is held where the model's provider cannot make it. */
function assertDerivationServed(source: VideoSource, model: string, serves: Serves): void {
  const feature = source.how === 'extension' ? 'video-extension' : 'video-edit';
  if (serves(model, feature)) return;
  throw new InvalidRequestError(
    `video: the provider of ${model} cannot ${source.how === 'extension' ? 'extend' : 'edit'} videos.`,
    'video',
  );
}

/** Whether the provider of a model can do something only some providers can (core/providers/types.ts). */
export type Serves = (model: string, feature: ProviderFeature) => boolean;
const servesNothing: Serves = () => false;

/**
 * Functions (offered, called or answered) and structured output are passed on to providers that
 * take them, and refused by name where the model's provider would silently drop them (an upstream
 * protocol without them, or a fallback that lacks them).
 */
function assertFeaturesServed(
  request: Extract<GenerationRequest, { kind: 'chat' }>,
  model: string,
  serves: Serves,
): void {
  const unserved = (what: string) =>
    `${what} ${what.endsWith('s') ? 'are' : 'is'} not supported by the provider of ${model}.`;
  if (request.responseFormat && !serves(model, 'json'))
    throw new InvalidRequestError(`responseFormat: ${unserved('structured output')}`, 'responseFormat');
  if (request.sampling?.logprobs && !serves(model, 'logprobs'))
    throw new InvalidRequestError(`logprobs: ${unserved('log probabilities')}`, 'logprobs');
  if (serves(model, 'tools')) return;
  if (request.tools?.functions.length) throw new InvalidRequestError(`tools: ${unserved('function tools')}`, 'tools');
  if (request.messages.some((m) => m.role === 'tool' || m.toolCalls?.length))
    throw new InvalidRequestError(`messages: ${unserved('function calls and their outputs')}`, 'messages');
}
