import sharp from 'sharp';
import { ProviderRejectedError } from '../errors';
import { sniffImageFormat } from './image-format';
import { DEFAULT_IMAGE_LIMITS, decodeImage, decodeOptions } from './image-input';

/** The encodings a client may ask an image in (OpenAI's `output_format`). */
export const IMAGE_OUTPUT_FORMATS = ['png', 'jpeg', 'webp'] as const;
export type ImageOutputFormat = (typeof IMAGE_OUTPUT_FORMATS)[number];

const TYPES: Record<ImageOutputFormat, { contentType: string; extension: string }> = {
  png: { contentType: 'image/png', extension: 'png' },
  jpeg: { contentType: 'image/jpeg', extension: 'jpg' },
  webp: { contentType: 'image/webp', extension: 'webp' },
};

/**
 * An image a provider produced, as the client asked it (PNG unless it asked otherwise): kept as it
 * is when it already is, re-encoded otherwise. A file that is no image this service reads fails
 * the run as a refusal, before anything is charged: the answer could not be given in that format.
 */
export async function imageInFormat(
  file: { data: Buffer; contentType: string; extension: string },
  format: ImageOutputFormat = 'png',
): Promise<{ data: Buffer; contentType: string; extension: string }> {
  const found = sniffImageFormat(file.data);
  if (found === undefined)
    throw new ProviderRejectedError(`The provider's output is not an image (${file.contentType}).`, 'output_format');
  if (found === format) return { data: file.data, ...TYPES[format] };
  try {
    const data = await decodeImage(
      () => sharp(file.data, decodeOptions(DEFAULT_IMAGE_LIMITS)).toFormat(format).toBuffer(),
      DEFAULT_IMAGE_LIMITS,
    );
    return { data, ...TYPES[format] };
  } catch (err) {
    throw new ProviderRejectedError(
      `The provider's ${found} image could not be given as ${format}: ${(err as Error).message}`,
      'output_format',
    );
  }
}
