import sharp from 'sharp';
import { renderImagePng } from './png';

/**
 * The simulator's image edit: the first input image, with the area to edit painted over by a
 * pattern drawn from the prompt — where the mask is transparent (OpenAI's convention), or, with
 * no mask, the whole image half-covered. Real pixels in, a visibly edited PNG out, of the size
 * asked (the input scaled to cover it, centred), or the input's size when none was asked.
 */
export async function editImage(input: {
  image: Buffer;
  mask?: Buffer | undefined;
  seed: string;
  size?: { width: number; height: number } | undefined;
}): Promise<Buffer> {
  const source = sharp(input.image);
  const base = input.size ? sharp(await source.resize({ ...input.size, fit: 'cover' }).toBuffer()) : source;
  const { width = 1, height = 1 } = await base.metadata();
  const pixels = await base.ensureAlpha().raw().toBuffer();
  const pattern = await sharp(await renderImagePng({ width, height, seed: input.seed }))
    .ensureAlpha()
    .raw()
    .toBuffer();
  const mask = input.mask
    ? await sharp(input.mask).resize(width, height, { fit: 'fill' }).ensureAlpha().extractChannel(3).raw().toBuffer()
    : undefined;
  const out = Buffer.alloc(pixels.length);
  for (let p = 0; p < width * height; p++) {
    // How much of the pattern: all of it where the mask is transparent, half everywhere without a mask.
    const share = mask ? (255 - mask[p]!) / 255 : 0.5;
    for (let c = 0; c < 3; c++) {
      const i = p * 4 + c;
      out[i] = Math.round(pixels[i]! * (1 - share) + pattern[i]! * share);
    }
    out[p * 4 + 3] = 255;
  }
  return sharp(out, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
}
