import sharp from 'sharp';
import { ImageTooLargeError } from './image-errors';
import { DEFAULT_IMAGE_LIMITS, decodeImage, decodeOptions, readImageHeader, type ImageLimits } from './image-input';
import { withImageSlot } from './image-slots';

export type UpscaleFactor = 2 | 4;

/**
 * The longest side an upscale produces, so a 2× takes inputs up to 4096 px and a 4× up to
 * 2048 px. 8192 is the largest texture many GPUs and mobile browsers display; past it the
 * picture is unusable for most clients anyway. It also bounds one job: an 8192 × 8192 RGBA
 * frame is 256 MiB while it is encoded, and the PNG encode alone takes seconds of a pool thread.
 */
export const MAX_UPSCALED_SIDE = 8192;

export interface UpscaledImage {
  data: Buffer;
  width: number;
  height: number;
  format: 'png';
}

/**
 * Resamples the image to exactly `scale` times its displayed size with Lanczos-3 and writes a
 * PNG (lossless, so the output adds no artefacts of its own; EXIF, GPS included, is dropped).
 */
export async function upscale(
  input: Buffer,
  scale: UpscaleFactor,
  limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
): Promise<UpscaledImage> {
  if (scale !== 2 && scale !== 4) throw new RangeError(`scale must be 2 or 4, got ${String(scale)}`);
  return withImageSlot(async () => {
    const { width, height } = await readImageHeader(input, limits);
    const maxInputSide = MAX_UPSCALED_SIDE / scale;
    if (Math.max(width, height) > maxInputSide) {
      throw new ImageTooLargeError(
        `A ${scale}× upscale accepts images up to ${maxInputSide} px on the long side; this one is ${width}×${height}.`,
      );
    }
    const { data, info } = await decodeImage(
      () =>
        sharp(input, decodeOptions(limits))
          // Upright first, so the result matches what a viewer showed of the input.
          .autoOrient()
          .resize(width * scale, height * scale, { kernel: 'lanczos3', fit: 'fill' })
          .png()
          .toBuffer({ resolveWithObject: true }),
      limits,
    );
    return { data, width: info.width, height: info.height, format: 'png' };
  });
}
