import sharp from 'sharp';
import type { Sharp } from 'sharp';
import { withImageSlot } from './image-slots';
import { vp8Keyframes, vp8KeyframeSize, webpOfVp8Keyframe } from './webm-frames';

/**
 * A video's still previews, made from its file: the thumbnail (its first frame) and the
 * spritesheet (frames spread over the clip, in a grid, left to right then top to bottom). Both
 * are JPEG. Only VP8 WebM can be read here (see webm-frames.ts); any other file has none.
 *
 * They are made for every video, in the provider step, so the signed URLs every read hands out
 * point at files that exist (a URL signed for the store cannot render on first request). What
 * keeps that cheap: each frame is decoded once, straight to the size it is shown at (libwebp
 * scales while it decodes), the tiles are laid into one raw canvas in memory and encoded once,
 * and a thumbnail already made while the run went on (the provider's first frame) is not made
 * again.
 */

export interface StillImage {
  data: Buffer;
  contentType: string;
  extension: string;
}

export interface VideoPreviews {
  thumbnail: StillImage;
  spritesheet: StillImage;
}

/** At most this many frames in a spritesheet, spread evenly from the first frame to the last. */
export const SPRITESHEET_MAX_FRAMES = 16;
export const SPRITESHEET_COLUMNS = 4;
/** Each frame of a spritesheet is at most this wide, its height kept in proportion. */
export const SPRITESHEET_TILE_WIDTH = 160;

const CHANNELS = 3;
const jpeg = (data: Buffer): StillImage => ({ data, contentType: 'image/jpeg', extension: 'jpg' });

/** A first frame as the thumbnail: one decode, one encode. `frame` is a WebP (a provider's preview or a keyframe of the file). */
export async function thumbnailOfFrame(frame: Buffer): Promise<StillImage> {
  return withImageSlot(async () => jpeg(await sharp(frame).removeAlpha().jpeg({ quality: 85 }).toBuffer()));
}

/**
 * The previews of a video file, or undefined when its format cannot be read without a video
 * decoder. `thumbnail: false` leaves out the thumbnail (one made earlier stands).
 */
export async function previewsOfVideo(
  file: { data: Buffer; contentType: string },
  { thumbnail = true }: { thumbnail?: boolean } = {},
): Promise<(Partial<VideoPreviews> & Pick<VideoPreviews, 'spritesheet'>) | undefined> {
  if (!file.contentType.startsWith('video/webm')) return undefined;
  const keyframes = vp8Keyframes(file.data);
  const first = keyframes[0];
  const size = first && vp8KeyframeSize(first);
  if (!first || !size) return undefined;
  return withImageSlot(async () => {
    const picks = spread(keyframes, SPRITESHEET_MAX_FRAMES);
    const tileWidth = Math.min(SPRITESHEET_TILE_WIDTH, size.width);
    const tileHeight = Math.max(1, Math.round((size.height * tileWidth) / size.width));
    const tile = (input: Sharp) =>
      input.removeAlpha().resize({ width: tileWidth, height: tileHeight, fit: 'fill' }).raw().toBuffer();

    let thumb: Buffer | undefined;
    let firstTile: Promise<Buffer> | undefined;
    if (thumbnail) {
      // Decoded once at full size: the thumbnail and the first tile both come from these pixels.
      const { data, info } = await sharp(webpOfVp8Keyframe(first))
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      const raw = { raw: { width: info.width, height: info.height, channels: info.channels } } as const;
      [thumb, firstTile] = [await sharp(data, raw).jpeg({ quality: 85 }).toBuffer(), tile(sharp(data, raw))];
    }
    const tiles = await Promise.all(
      picks.map((frame, i) => (i === 0 && firstTile) || tile(sharp(webpOfVp8Keyframe(frame)))),
    );

    const columns = Math.min(SPRITESHEET_COLUMNS, picks.length);
    const rows = Math.ceil(picks.length / columns);
    const sheetWidth = tileWidth * columns;
    const canvas = Buffer.alloc(sheetWidth * tileHeight * rows * CHANNELS);
    const rowBytes = tileWidth * CHANNELS;
    tiles.forEach((pixels, i) => {
      const left = (i % columns) * rowBytes;
      const top = Math.floor(i / columns) * tileHeight;
      for (let y = 0; y < tileHeight; y++)
        pixels.copy(canvas, (top + y) * sheetWidth * CHANNELS + left, y * rowBytes, (y + 1) * rowBytes);
    });
    const spritesheet = await sharp(canvas, {
      raw: { width: sheetWidth, height: tileHeight * rows, channels: CHANNELS },
    })
      .jpeg({ quality: 80 })
      .toBuffer();
    return { ...(thumb ? { thumbnail: jpeg(thumb) } : {}), spritesheet: jpeg(spritesheet) };
  });
}

/** `max` items spread evenly over `items`, the first and the last included. */
function spread<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  return Array.from({ length: max }, (_, i) => items[Math.round((i * (items.length - 1)) / (max - 1))]!);
}
