import { z } from 'zod';
import { InvalidRequestError } from '../../core/errors';
import type { EditInput } from '../../service/generation/requests';
import { deadlineSeconds, imageUrl as httpImageUrl, modelId } from '../shared/fields';
import {
  callbackFields,
  endUser,
  formNumber,
  maxCredits,
  outputFormat,
  prompt,
  responseFormat,
} from '../shared/openai/media';
import { GROUP_B_PARAMS } from '../shared/openai/words';

/** OpenAI's image edits (POST /v1/images/edits): the body as the SDKs send it, and its inputs in the service's terms. */
const editReference = z.union(
  [
    z.object({ image_url: httpImageUrl('image_url') }),
    z.object({ file_id: z.string().max(100).describe('The id of one of the account’s succeeded image generations') }),
  ],
  { error: 'an image is { "image_url": "https://…" } or { "file_id": "gen_…" }' },
);

/** POST /v1/images/edits as the SDKs send it: multipart (`image` or `image[]` files, `mask`), or JSON (`images`, `mask` by URL or id). */
export const imageEditBody = z
  .object({
    model: modelId.describe('An image id of GET /v1/models whose options list features: ["edit"]'),
    prompt,
    image: z.unknown().optional().describe('Multipart: the image to edit (PNG, JPEG or WebP); several as image[]'),
    'image[]': z.unknown().optional().describe('Multipart: several images, the first edited, the others guiding it'),
    images: z.array(editReference).min(1).max(16).optional().describe('JSON: the images, by URL or file id'),
    mask: z
      .unknown()
      .optional()
      .describe('Where to edit: its transparent pixels. A file (multipart), or { image_url } / { file_id } (JSON)'),
    n: formNumber(
      z.number().int().min(1, { error: 'n must be 1 to 4' }).max(4, { error: 'n must be 1 to 4' }),
    ).optional(),
    size: z
      .enum(['auto', '256x256', '512x512', '1024x1024', '1536x1024', '1024x1536'], {
        error: 'size is not one OpenAI offers',
      })
      .optional()
      .describe('The size of the edited images; auto (or none) keeps the size of the image edited'),
    quality: z.enum(['auto', 'low', 'medium', 'high', 'standard']).optional().describe('Accepted and ignored'),
    response_format: responseFormat,
    output_format: outputFormat,
    output_compression: formNumber(z.number().int().min(0).max(100)).optional().describe('Accepted and ignored'),
    background: z.enum(['transparent', 'opaque', 'auto']).optional().describe('Accepted and ignored'),
    input_fidelity: z.enum(['high', 'low']).optional().describe('Accepted and ignored'),
    moderation: z.enum(['low', 'auto']).optional().describe('Accepted and ignored'),
    user: endUser.optional(),
    safety_identifier: endUser.nullish(),
    deadline_seconds: formNumber(deadlineSeconds),
    max_credits: formNumber(maxCredits),
    ...callbackFields,
  })
  .meta({ id: 'ImageEditRequest' });

type ImageEditBody = z.infer<typeof imageEditBody>;

/** The size an edit asks for, as the service's width and height; none for `auto`, which keeps the input's. */
export function editSizeOf(size: ImageEditBody['size']): { width?: number; height?: number } {
  if (size === undefined || size === 'auto') return {};
  const [width, height] = size.split('x').map(Number) as [number, number];
  return { width, height };
}

/** An edit's inputs as the edits route names them. */
export const EDIT_PARAMS = { ...GROUP_B_PARAMS, editImages: 'image', editMask: 'mask' };

/** The edit's inputs in the service's terms: uploads as bytes, URLs, and file ids as the generations they name. */
export function editOf(body: ImageEditBody): { images: EditInput[]; mask?: EditInput } {
  const filesOf = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  const given = [...filesOf(body.image), ...filesOf(body['image[]'])];
  if (given.some((v) => !Buffer.isBuffer(v)))
    throw new InvalidRequestError(
      'image must be uploaded image files (multipart); send URLs as images in JSON.',
      'image',
    );
  const reference = (r: z.infer<typeof editReference>): EditInput =>
    'image_url' in r ? { url: r.image_url } : { generation: r.file_id };
  const images: EditInput[] = body.images ? body.images.map(reference) : (given as Buffer[]).map((file) => ({ file }));
  if (images.length === 0)
    throw new InvalidRequestError(
      'image: an image to edit is required: a file (multipart image or image[]), or images by URL or file id (JSON).',
      'image',
    );
  if (images.length > 16) throw new InvalidRequestError('image: at most 16 images.', 'image');
  if (body.mask === undefined) return { images };
  if (Buffer.isBuffer(body.mask)) return { images, mask: { file: body.mask } };
  const mask = editReference.safeParse(body.mask);
  if (!mask.success)
    throw new InvalidRequestError(
      'mask must be an uploaded image file, or { "image_url": … } or { "file_id": … }.',
      'mask',
    );
  return { images, mask: reference(mask.data) };
}
