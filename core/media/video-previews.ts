import sharp from 'sharp';
import { withImageSlot } from './image-slots';
import { vp8Keyframes, webpOfVp8Keyframe } from './webm-frames';

/**
 * A video's still previews, made from its file: the thumbnail (its first frame) and the
 * spritesheet (frames spread over the clip, in a grid, left to right then top to bottom). Both
 * are JPEG. Only VP8 WebM can be read here (see webm-frames.ts); any other file has none.
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

const jpeg = (data: Buffer): StillImage => ({ data, contentType: 'image/jpeg', extension: 'jpg' });

/** The previews of a video file, or undefined when its format cannot be read without a video decoder. */
export async function previewsOfVideo(file: { data: Buffer; contentType: string }): Promise<VideoPreviews | undefined> {
  if (!file.contentType.startsWith('video/webm')) return undefined;
  const keyframes = vp8Keyframes(file.data);
  const first = keyframes[0];
  if (!first) return undefined;
  return withImageSlot(async () => {
    const firstFrame = sharp(webpOfVp8Keyframe(first));
    const { width, height } = await firstFrame.metadata();
    const thumbnail = await firstFrame.jpeg({ quality: 85 }).toBuffer();

    const picks = spread(keyframes, SPRITESHEET_MAX_FRAMES);
    const tileWidth = Math.min(SPRITESHEET_TILE_WIDTH, width);
    const tileHeight = Math.max(1, Math.round((height * tileWidth) / width));
    const columns = Math.min(SPRITESHEET_COLUMNS, picks.length);
    const rows = Math.ceil(picks.length / columns);
    const tiles = await Promise.all(picks.map((frame) =>
      sharp(webpOfVp8Keyframe(frame)).resize({ width: tileWidth, height: tileHeight, fit: 'fill' }).png({ compressionLevel: 0 }).toBuffer()));
    const spritesheet = await sharp({ create: { width: tileWidth * columns, height: tileHeight * rows, channels: 3, background: '#000' } })
      .composite(tiles.map((input, i) => ({ input, left: (i % columns) * tileWidth, top: Math.floor(i / columns) * tileHeight })))
      .jpeg({ quality: 80 })
      .toBuffer();
    return { thumbnail: jpeg(thumbnail), spritesheet: jpeg(spritesheet) };
  });
}

/** `max` items spread evenly over `items`, the first and the last included. */
function spread<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  return Array.from({ length: max }, (_, i) => items[Math.round((i * (items.length - 1)) / (max - 1))]!);
}
