import { describe, it, expect } from 'vitest';
import { randomBytes } from 'node:crypto';
import sharp, { type Sharp } from 'sharp';
import { CorruptImageError, ImageTooLargeError, UnsupportedImageError } from '../../../../core/media/image-errors';
import { MAX_CONCURRENT_IMAGE_JOBS } from '../../../../core/media/image-slots';
import { MAX_UPSCALED_SIDE, upscale } from '../../../../core/media/upscale';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function noise(width: number, height: number): Sharp {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });
}

function solid(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#336699' } })
    .png()
    .toBuffer();
}

describe('upscale', () => {
  it.each([
    [2, 120, 80],
    [4, 120, 80],
    [2, 33, 17],
    [4, 1, 1],
  ] as const)('%i× of %i×%i is exactly that many times larger, as a PNG', async (scale, width, height) => {
    const out = await upscale(await noise(width, height).jpeg().toBuffer(), scale);
    expect(out).toMatchObject({ format: 'png', width: width * scale, height: height * scale });
    expect(out.data.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(await sharp(out.data).metadata()).toMatchObject({
      format: 'png',
      width: width * scale,
      height: height * scale,
    });
  });

  it('accepts every input format inspectImage accepts', async () => {
    for (const input of [noise(20, 10).webp(), noise(20, 10).gif(), noise(20, 10).avif(), noise(20, 10).png()]) {
      expect(await upscale(await input.toBuffer(), 2)).toMatchObject({ width: 40, height: 20 });
    }
  });

  it('scales the picture as displayed when EXIF rotates it', async () => {
    const sideways = await noise(100, 50).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const out = await upscale(sideways, 2);
    expect(out).toMatchObject({ width: 100, height: 200 });
    expect((await sharp(out.data).metadata()).orientation).toBeUndefined();
  });

  it('resamples (Lanczos) instead of repeating pixels', async () => {
    // A black pixel beside a white one: nearest-neighbour would give only 0 and 255.
    const pair = await sharp(Buffer.from([0, 0, 0, 255, 255, 255]), { raw: { width: 2, height: 1, channels: 3 } })
      .png()
      .toBuffer();
    const out = await upscale(pair, 4);
    const pixels = await sharp(out.data).raw().toBuffer();
    const levels = new Set(pixels);
    expect(levels.size).toBeGreaterThan(4);
    expect([...levels].some((v) => v > 0 && v < 255)).toBe(true);
  });

  it.each([
    [2, MAX_UPSCALED_SIDE / 2],
    [4, MAX_UPSCALED_SIDE / 4],
  ] as const)('%i× takes a long side up to %i px and refuses one more', async (scale, longest) => {
    const fits = await upscale(await solid(longest, 1), scale);
    expect(fits).toMatchObject({ width: MAX_UPSCALED_SIDE, height: scale });
    await expect(upscale(await solid(longest + 1, 1), scale)).rejects.toBeInstanceOf(ImageTooLargeError);
    await expect(upscale(await solid(1, longest + 1), scale)).rejects.toBeInstanceOf(ImageTooLargeError);
  });

  it('refuses what is not an image, or not a whole one', async () => {
    await expect(upscale(Buffer.from('<html><body>not an image</body></html>'), 2)).rejects.toBeInstanceOf(
      UnsupportedImageError,
    );
    await expect(upscale(randomBytes(2048), 2)).rejects.toBeInstanceOf(UnsupportedImageError);
    const png = await noise(300, 200).png().toBuffer();
    await expect(upscale(png.subarray(0, png.length / 2), 2)).rejects.toBeInstanceOf(CorruptImageError);
  });

  it('refuses a scale other than 2 or 4 from an unchecked caller', async () => {
    await expect(upscale(await solid(4, 4), 3 as 2)).rejects.toBeInstanceOf(RangeError);
  });

  it('keeps the event loop turning while it works', async () => {
    const input = await noise(512, 512).jpeg().toBuffer();
    // Timer callbacks (the event loop turning) that found the upscale at work in libuv's pool.
    let ticksWhileWorking = 0;
    const ticker = setInterval(() => {
      if (sharp.counters().process > 0) ticksWhileWorking++;
    }, 5);
    try {
      await upscale(input, 4);
    } finally {
      clearInterval(ticker);
    }
    // Run on the event loop, no timer could fire while it worked, however fast or slow the machine.
    expect(ticksWhileWorking).toBeGreaterThan(0);
  });

  it('holds at most two thread-pool threads however many upscales are asked for', async () => {
    expect(MAX_CONCURRENT_IMAGE_JOBS).toBe(2);
    const input = await noise(256, 256).png().toBuffer();
    let busiest = 0;
    const sampler = setInterval(() => {
      busiest = Math.max(busiest, sharp.counters().process + sharp.counters().queue);
    }, 1);
    try {
      await Promise.all(Array.from({ length: 6 }, () => upscale(input, 4)));
    } finally {
      clearInterval(sampler);
    }
    // Without the slots all six sit in libuv's queue at once (measured: 6).
    expect(busiest).toBeGreaterThan(0);
    expect(busiest).toBeLessThanOrEqual(2);
  });
});
