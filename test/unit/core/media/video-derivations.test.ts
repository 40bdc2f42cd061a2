import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { MediaRequestError } from '../../../../core/media/png';
import { editVideoWebm, extendVideoWebm } from '../../../../core/media/video-derivations';
import { renderVideoWebm } from '../../../../core/media/webm';
import { vp8Keyframes, webpOfVp8Keyframe } from '../../../../core/media/webm-frames';

/** Every frame of a file as raw RGB, decoded on its own (each is a keyframe) by libwebp. */
async function framesOf(file: Buffer): Promise<Buffer[]> {
  return Promise.all(vp8Keyframes(file).map((f) => sharp(webpOfVp8Keyframe(f)).removeAlpha().raw().toBuffer()));
}

/** The mean absolute difference of two frames' channels, 0 to 255. */
function distance(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return sum / a.length;
}

/** The duration a WebM's Segment/Info declares, read with sharp-free byte search (8-byte float after 0x4489 0x88). */
function declaredMs(file: Buffer): number {
  const at = file.indexOf(Buffer.from([0x44, 0x89, 0x88]));
  expect(at).toBeGreaterThan(0);
  return file.readDoubleBE(at + 3);
}

const size = { width: 320, height: 176 };

describe('extendVideoWebm', () => {
  it('keeps the source frame for frame, then carries on from its last frame towards the prompt’s picture', async () => {
    const source = await renderVideoWebm({ ...size, seconds: 2, seed: 'waves|gen_a' });
    const extended = await extendVideoWebm({ source, seconds: 3, seed: 'waves at night|gen_b' });

    const sourceFrames = vp8Keyframes(source);
    const frames = vp8Keyframes(extended);
    // 2 s and 3 s more at 6 fps: 12 + 18 frames, and the file says 5 s.
    expect(sourceFrames).toHaveLength(12);
    expect(frames).toHaveLength(30);
    expect(declaredMs(extended)).toBe(5000);
    // The source's frames are in the file byte for byte.
    frames.slice(0, 12).forEach((f, i) => expect(Buffer.from(f).equals(Buffer.from(sourceFrames[i]!))).toBe(true));

    const decoded = await framesOf(extended);
    const last = decoded[11]!;
    // The first new frame is the source's last one (but for the lossy encode) ...
    expect(distance(decoded[12]!, last)).toBeLessThan(3);
    // ... unlike the source's first, and the continuation moves away from it frame by frame.
    expect(distance(decoded[0]!, last)).toBeGreaterThan(3);
    const away = decoded.slice(12).map((f) => distance(f, last));
    expect(away.at(-1)!).toBeGreaterThan(15);
    for (let i = 1; i < away.length; i++) expect(away[i]!).toBeGreaterThanOrEqual(away[i - 1]! - 1);
    expect(await sharp(webpOfVp8Keyframe(frames[29]!)).metadata()).toMatchObject(size);
  });

  it('refuses a source it cannot read frames from', async () => {
    await expect(extendVideoWebm({ source: Buffer.from('not a video'), seconds: 1, seed: 's' })).rejects.toThrow(
      MediaRequestError,
    );
  });
});

describe('editVideoWebm', () => {
  it('changes every frame of the source by the prompt, at its length, keeping what the source shows', async () => {
    const source = await renderVideoWebm({ ...size, seconds: 2, seed: 'a kite|gen_c' });
    const edited = await editVideoWebm({ source, seed: 'a red kite|gen_d' });
    const other = await editVideoWebm({ source, seed: 'a kite in snow|gen_e' });
    const unrelated = await renderVideoWebm({ ...size, seconds: 2, seed: 'a red kite|gen_d' });
    expect(declaredMs(edited)).toBe(2000);

    const [src, out, out2, plain] = await Promise.all([source, edited, other, unrelated].map(framesOf));
    expect(out).toHaveLength(src!.length);
    for (let i = 0; i < src!.length; i++) {
      // Changed by the prompt, and differently by another prompt ...
      expect(distance(out![i]!, src![i]!)).toBeGreaterThan(5);
      expect(distance(out![i]!, out2![i]!)).toBeGreaterThan(3);
      // ... yet nearer the source than the prompt's own picture is: an edited copy, not a new video.
      expect(distance(out![i]!, src![i]!)).toBeLessThan(distance(plain![i]!, src![i]!));
    }
  });
});
