import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { paintFrames } from '../../../../core/media/paint-pool';
import { sceneFromSeed } from '../../../../core/media/seed';
import {
  previewsOfVideo,
  SPRITESHEET_COLUMNS,
  SPRITESHEET_MAX_FRAMES,
  SPRITESHEET_TILE_WIDTH,
} from '../../../../core/media/video-previews';
import { renderVideoWebm } from '../../../../core/media/webm';
import { vp8Keyframes } from '../../../../core/media/webm-frames';

const JPEG = Buffer.from([0xff, 0xd8, 0xff]);

describe('video previews from a VP8 WebM', () => {
  it('finds every keyframe of the simulator’s clip (each of its frames is one)', async () => {
    const video = await renderVideoWebm({ width: 320, height: 180, seconds: 2, fps: 6, seed: 's' });
    expect(vp8Keyframes(video)).toHaveLength(12);
  });

  it('the thumbnail is the first frame at the video’s size, the spritesheet a 4-column grid of frames spread over the clip', async () => {
    const seed = 'a lighthouse|gen_1';
    const video = await renderVideoWebm({ width: 320, height: 180, seconds: 5, seed });
    const previews = await previewsOfVideo({ data: video, contentType: 'video/webm' });
    expect(previews?.thumbnail?.data.subarray(0, 3)).toEqual(JPEG);
    expect(previews?.spritesheet.data.subarray(0, 3)).toEqual(JPEG);
    expect(await sharp(previews!.thumbnail!.data).metadata()).toMatchObject({
      format: 'jpeg',
      width: 320,
      height: 180,
    });
    const tileHeight = (180 * SPRITESHEET_TILE_WIDTH) / 320;
    const rows = SPRITESHEET_MAX_FRAMES / SPRITESHEET_COLUMNS;
    expect(await sharp(previews!.spritesheet.data).metadata()).toMatchObject({
      format: 'jpeg',
      width: SPRITESHEET_TILE_WIDTH * SPRITESHEET_COLUMNS,
      height: tileHeight * rows,
    });

    // The first frame, not any frame: close to the painter's frame 0 (both codecs are lossy), far from the last.
    const [first, last] = await paintFrames(sceneFromSeed(seed), 320, 180, [0, 29 / 30]);
    const thumb = await sharp(previews!.thumbnail!.data).removeAlpha().raw().toBuffer();
    const distance = (a: Buffer, b: Buffer) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]!), 0) / a.length;
    expect(distance(thumb, first!)).toBeLessThan(6);
    expect(distance(thumb, last!)).toBeGreaterThan(distance(thumb, first!) * 2);
  });

  it('a short clip gives a grid of the frames it has', async () => {
    const video = await renderVideoWebm({ width: 64, height: 64, seconds: 1, fps: 3, seed: 'x' });
    const previews = await previewsOfVideo({ data: video, contentType: 'video/webm' });
    expect(await sharp(previews!.spritesheet.data).metadata()).toMatchObject({ width: 64 * 3, height: 64 });
  });

  it('has none for a file it cannot read without a video decoder', async () => {
    expect(
      await previewsOfVideo({ data: Buffer.from('\0\0\0\x18ftypmp42'), contentType: 'video/mp4' }),
    ).toBeUndefined();
    expect(await previewsOfVideo({ data: Buffer.from('not a video'), contentType: 'video/webm' })).toBeUndefined();
    expect(vp8Keyframes(new Uint8Array([0x1a, 0x45, 0xdf]))).toEqual([]);
  });
});
