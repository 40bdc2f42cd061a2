import sharp, { type Metadata, type SharpOptions } from 'sharp';
import { CorruptImageError, ImageInputError, ImageTooLargeError, UnsupportedImageError } from './image-errors';
import { sniffImageFormat, type ImageFormat } from './image-format';
import { withImageSlot } from './image-slots';

export interface ImageLimits {
  maxBytes: number;
  /** Longest side in pixels, as displayed (after EXIF orientation). */
  maxSide: number;
  /** Width × height; sharp refuses past it from the header, before inflating anything. */
  maxPixels: number;
}

/**
 * 25 MiB holds any camera JPEG or a large PNG; 32 megapixels (8192 × 4096) is beyond phone
 * cameras and decodes to at most 128 MiB of RGBA, which one job may hold without threatening
 * the worker.
 */
export const DEFAULT_IMAGE_LIMITS: ImageLimits = {
  maxBytes: 25 * 1024 * 1024,
  maxSide: 8192,
  maxPixels: 8192 * 4096,
};

export interface ImageInfo {
  format: ImageFormat;
  /** As displayed, after EXIF orientation. */
  width: number;
  height: number;
}

/**
 * Whether the bytes are an image we accept, judged by decoding them (never by a file name or a
 * Content-Type): the header must agree with the signature, fit the limits, and every row must
 * decode. Animated GIF and WebP count as their first frame.
 */
export async function inspectImage(input: Buffer, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): Promise<ImageInfo> {
  return withImageSlot(async () => {
    const info = await readImageHeader(input, limits);
    // A header can promise rows the file does not hold; only a full decode finds out. A
    // thumbnail still reads every row, without holding the full-size pixels.
    await decodeImage(
      () => sharp(input, decodeOptions(limits)).resize(64, 64, { fit: 'inside' }).raw().toBuffer(),
      limits,
    );
    return info;
  });
}

/** The checks that need only the header; callers that decode anyway add their own decode. */
export async function readImageHeader(input: Buffer, limits: ImageLimits): Promise<ImageInfo> {
  if (input.length > limits.maxBytes) {
    throw new ImageTooLargeError(`The image is ${input.length} bytes; at most ${limits.maxBytes} are accepted.`);
  }
  const format = sniffImageFormat(input);
  if (format === undefined) throw new UnsupportedImageError('The data is not a PNG, JPEG, WebP, GIF or AVIF image.');
  const meta = await decodeImage(() => sharp(input, decodeOptions(limits)).metadata(), limits);
  if (decodedFormat(meta) !== format) {
    throw new UnsupportedImageError(`The data starts like ${format.toUpperCase()} but does not decode as one.`);
  }
  const { width, height } = meta.autoOrient;
  if (width * height > limits.maxPixels) throw tooManyPixels(limits);
  if (Math.max(width, height) > limits.maxSide) {
    throw new ImageTooLargeError(
      `The image is ${width}×${height}; at most ${limits.maxSide} px on a side are accepted.`,
    );
  }
  return { format, width, height };
}

export function decodeOptions(limits: ImageLimits): SharpOptions {
  return {
    limitInputPixels: limits.maxPixels,
    // Truncated or damaged data fails; a harmless warning (stray bytes after a JPEG) does not.
    failOn: 'error',
    sequentialRead: true,
  };
}

/** Runs a sharp call and turns its untyped failures into the named ones. */
export async function decodeImage<T>(run: () => Promise<T>, limits: ImageLimits): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ImageInputError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (/pixel limit/i.test(message)) throw tooManyPixels(limits);
    if (/unsupported image format/i.test(message))
      throw new UnsupportedImageError('The data is not an image format we accept.');
    throw new CorruptImageError('The image could not be decoded; it may be truncated or damaged.');
  }
}

function decodedFormat(meta: Metadata): ImageFormat | undefined {
  switch (meta.format) {
    case 'png':
    case 'jpeg':
    case 'webp':
    case 'gif':
      return meta.format;
    case 'heif':
      return meta.compression === 'av1' ? 'avif' : undefined;
    default:
      return undefined;
  }
}

function tooManyPixels(limits: ImageLimits): ImageTooLargeError {
  return new ImageTooLargeError(`The image has more than ${limits.maxPixels} pixels.`);
}
