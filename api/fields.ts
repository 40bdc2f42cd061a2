import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { safeText } from '../core/text';
import type { Door } from '../core/vocabulary';
import { generationKind, generationStatus } from './schemas';

/**
 * The request fields every door takes, each rule written once. Doors name some fields their own
 * way (groups A and B say `image_url`, group C `imageUrl`): a builder takes the name its message
 * uses, so each door's error messages stay its own.
 */

/** The longest prompt of an image, video or upscale. Chat prompts are not limited here: the service caps them to what the model takes. */
export const MAX_MEDIA_PROMPT_CHARS = 10_000;

/** The prompt of an image or a video (and of anything written for one). */
export const mediaPrompt = safeText({ trim: true, min: 1, max: MAX_MEDIA_PROMPT_CHARS, label: 'prompt' });

/** An upscale's optional guidance: a media prompt that may be empty. */
export const guidancePrompt = safeText({ trim: true, max: MAX_MEDIA_PROMPT_CHARS });

/** A chat prompt: any length, since long input is capped to what the model accepts. */
export const chatPrompt = safeText({ trim: true, min: 1, label: 'prompt' });

/** A model id or alias, as the catalogue and each door's model list name them. */
export const modelId = safeText({ trim: true, min: 1, max: 100, label: 'model' });

/** An input image the service fetches itself (upscale, image-to-video); `name` is the field as the door spells it. */
export const imageUrl = (name: string) => z.url({ protocol: /^https?$/, error: `${name} must be an http(s) URL` }).max(2048);

/** The Idempotency-Key header (DESIGN §5): the same key and body within 24 h answer the first request again. */
export const idempotencyKey = z.string().regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1 to 255 visible ASCII characters.').optional();

/** Headers every generate endpoint of groups A and C reads (RFC 7240 Prefer; Idempotency-Key). */
export const generateHeaders = z.looseObject({
  'idempotency-key': idempotencyKey.describe('The same key and body within 24 h return the same generation, never a second hold'),
  prefer: z.string().optional().describe('respond-async: answer at once with the accepted state instead of waiting for an image or chat'),
});

/** RFC 7240: `Prefer: respond-async` asks for the accepted state at once instead of the result. */
function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '').split(',').some((p) => p.trim().toLowerCase() === 'respond-async');
}

interface KeyedRequest {
  headers: { 'idempotency-key'?: string | undefined };
}

/** The Idempotency-Key with the route and body it stands for, so that only a true repeat is answered again. */
export function idempotencyOf(request: KeyedRequest, route: string, body: unknown) {
  const key = request.headers['idempotency-key'];
  return key === undefined ? undefined : { key, route, body };
}

/** The service options of a generate POST of group A or C: its door, `Prefer`, the request's logger and the Idempotency-Key. */
export function generateOptionsOf(
  request: { headers: KeyedRequest['headers'] & { prefer?: string | undefined }; body: unknown; log: FastifyBaseLogger },
  door: Door,
  route: string,
) {
  return { door, respondAsync: prefersAsync(request.headers.prefer), log: request.log, idempotency: idempotencyOf(request, route, request.body) };
}

/** The query of a page of the account's generations (group A's list, the dashboard's). */
export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
  cursor: z.string().max(400).optional().describe('next_cursor of the previous page'),
  kind: generationKind.optional(),
  status: generationStatus.optional(),
});
