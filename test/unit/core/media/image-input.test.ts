import { describe, it, expect } from 'vitest';
import { randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import sharp, { type Sharp } from 'sharp';
import { CorruptImageError, ImageTooLargeError, UnsupportedImageError } from '../../../../core/media/image-errors';
import { DEFAULT_IMAGE_LIMITS, inspectImage } from '../../../../core/media/image-input';

function noise(width: number, height: number): Sharp {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });
}

/** A PNG written by hand, so its header can claim any size whatever the data holds. */
function handMadePng(width: number, height: number, idat: Buffer): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('inspectImage accepts real images by their content', () => {
  it.each([
    ['png', () => noise(120, 80).png().toBuffer()],
    ['jpeg', () => noise(120, 80).jpeg().toBuffer()],
    ['webp', () => noise(120, 80).webp().toBuffer()],
    ['gif', () => noise(120, 80).gif().toBuffer()],
    ['avif', () => noise(120, 80).avif().toBuffer()],
  ] as const)('%s', async (format, make) => {
    expect(await inspectImage(await make())).toEqual({ format, width: 120, height: 80 });
  });

  it('reports the size a viewer sees when EXIF rotates the picture', async () => {
    const sideways = await noise(100, 50).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    expect(await inspectImage(sideways)).toEqual({ format: 'jpeg', width: 50, height: 100 });
  });

  it('reads an animated GIF as its first frame', async () => {
    const frames = await sharp(randomBytes(40 * 90 * 3), {
      raw: { width: 40, height: 90, channels: 3, pageHeight: 30 },
    })
      .gif()
      .toBuffer();
    expect((await sharp(frames, { pages: -1 }).metadata()).pages).toBe(3);
    expect(await inspectImage(frames)).toEqual({ format: 'gif', width: 40, height: 30 });
  });
});

describe('inspectImage refuses what is not an image we accept', () => {
  it.each([
    ['HTML', () => Buffer.from('<!doctype html><html><body><img src=x></body></html>')],
    ['random bytes', () => randomBytes(4096)],
    ['an empty buffer', () => Buffer.alloc(0)],
    [
      'SVG, which libvips could parse',
      () => Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'),
    ],
    ['TIFF, which libvips could decode', () => noise(10, 10).tiff().toBuffer()],
  ])('%s', async (_name, make) => {
    await expect(inspectImage(await make())).rejects.toBeInstanceOf(UnsupportedImageError);
  });

  it('refuses a PNG signature in front of other data', async () => {
    const fake = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(1000)]);
    await expect(inspectImage(fake)).rejects.toBeInstanceOf(CorruptImageError);
  });

  it.each([
    ['png', () => noise(300, 200).png().toBuffer()],
    ['jpeg', () => noise(300, 200).jpeg().toBuffer()],
  ])('refuses a truncated %s whose header is intact', async (_format, make) => {
    const whole = await make();
    const truncated = whole.subarray(0, Math.floor(whole.length * 0.9));
    expect((await sharp(truncated).metadata()).width).toBe(300);
    await expect(inspectImage(truncated)).rejects.toBeInstanceOf(CorruptImageError);
  });

  it('refuses a truncated webp (its RIFF header no longer matches)', async () => {
    const whole = await noise(300, 200).webp().toBuffer();
    await expect(inspectImage(whole.subarray(0, Math.floor(whole.length * 0.9)))).rejects.toBeInstanceOf(
      CorruptImageError,
    );
  });
});

describe('inspectImage refuses images past the limits', () => {
  it('refuses a side longer than the limit', async () => {
    const wide = await sharp({
      create: { width: DEFAULT_IMAGE_LIMITS.maxSide + 1, height: 1, channels: 3, background: 'red' },
    })
      .png()
      .toBuffer();
    await expect(inspectImage(wide)).rejects.toBeInstanceOf(ImageTooLargeError);
    const limitWide = await sharp({
      create: { width: DEFAULT_IMAGE_LIMITS.maxSide, height: 1, channels: 3, background: 'red' },
    })
      .png()
      .toBuffer();
    expect(await inspectImage(limitWide)).toMatchObject({ width: DEFAULT_IMAGE_LIMITS.maxSide });
  });

  it('applies the limits it is given', async () => {
    const image = await noise(200, 200).png().toBuffer();
    await expect(inspectImage(image, { ...DEFAULT_IMAGE_LIMITS, maxPixels: 200 * 199 })).rejects.toBeInstanceOf(
      ImageTooLargeError,
    );
    await expect(inspectImage(image, { ...DEFAULT_IMAGE_LIMITS, maxSide: 199 })).rejects.toBeInstanceOf(
      ImageTooLargeError,
    );
    await expect(inspectImage(image, { ...DEFAULT_IMAGE_LIMITS, maxBytes: image.length - 1 })).rejects.toBeInstanceOf(
      ImageTooLargeError,
    );
  });

  it('refuses a decompression bomb: a complete 36-megapixel PNG of 35 KB', async () => {
    const side = 6000;
    const bomb = handMadePng(side, side, deflateSync(Buffer.alloc((side + 1) * side), { level: 9 }));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expect(side * side).toBeGreaterThan(DEFAULT_IMAGE_LIMITS.maxPixels);
    // Within every other limit: only the pixel count gives it away.
    expect(side).toBeLessThanOrEqual(DEFAULT_IMAGE_LIMITS.maxSide);
    await expect(inspectImage(bomb)).rejects.toBeInstanceOf(ImageTooLargeError);
  });

  it('refuses a header claiming ten billion pixels without inflating anything', async () => {
    const bomb = handMadePng(100_000, 100_000, deflateSync(Buffer.alloc(100_001)));
    // Refused for the pixel count its header claims, before any decoding could fail on its data.
    const refused = inspectImage(bomb);
    await expect(refused).rejects.toBeInstanceOf(ImageTooLargeError);
    await expect(refused).rejects.toThrow(`The image has more than ${DEFAULT_IMAGE_LIMITS.maxPixels} pixels.`);
  });
});
