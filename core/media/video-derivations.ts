import sharp from 'sharp';
import { MediaRequestError } from './png';
import { paintFrames } from './paint-pool';
import { sceneFromSeed } from './seed';
import { DEFAULT_FPS, EncodedFrame, muxVp8Frames } from './webm';
import { vp8Keyframes, vp8KeyframeSize, webpOfVp8Keyframe } from './webm-frames';

/**
 * The simulator's videos made from another: a continuation (the source as it was, then new
 * frames that start from its last frame and move on towards what the prompt paints) and an edited
 * copy (every frame of the source changed by what the prompt paints). The source is a WebM whose
 * every frame is a VP8 keyframe, as the simulator makes them; its frames are read without a video
 * decoder (webm-frames.ts). A file that gives no frames is refused (a MediaRequestError).
 */

/** How much of the prompt's picture an edited frame takes; the rest is the source's. */
export const EDIT_STRENGTH = 0.45;

/** A source video's frames as the file has them, and its picture size. */
interface SourceClip {
  width: number;
  height: number;
  frames: Uint8Array[];
}

/** The source file's frames, or a MediaRequestError when it has none this module can read. */
export function sourceClipOf(file: Buffer): SourceClip {
  const frames = vp8Keyframes(file);
  const size = frames[0] && vp8KeyframeSize(frames[0]);
  if (!size) throw new MediaRequestError('the source video gives no VP8 frames to continue or edit');
  return { ...size, frames };
}

/** One VP8 keyframe as raw RGB, the form the painter and the encoder use. */
export async function decodeFrame(frame: Uint8Array, width: number, height: number): Promise<Buffer> {
  return sharp(webpOfVp8Keyframe(frame)).removeAlpha().resize(width, height, { fit: 'fill' }).raw().toBuffer();
}

/**
 * The source followed by `seconds` more: its frames byte for byte, then new ones. The first new
 * frame is the source's last one, barely moved; each later one takes more of the prompt's moving
 * picture, so the clip carries on from where the source stopped.
 */
export async function extendVideoWebm(request: { source: Buffer; seconds: number; seed: string }): Promise<Buffer> {
  const { width, height, frames } = sourceClipOf(request.source);
  const added = Math.max(1, Math.round(request.seconds * DEFAULT_FPS));
  const last = await decodeFrame(frames.at(-1)!, width, height);
  const scene = sceneFromSeed(request.seed);
  const frameCount = frames.length + added;
  return muxVp8Frames(
    { width, height, fps: DEFAULT_FPS, seconds: frameCount / DEFAULT_FPS, frameCount },
    async (indices) => {
      const newOnes = indices.filter((i) => i >= frames.length).map((i) => i - frames.length);
      const painted = await paintFrames(
        scene,
        width,
        height,
        newOnes.map((k) => k / added),
      );
      return indices.map((i) => {
        if (i < frames.length) return new EncodedFrame(frames[i]!);
        const k = i - frames.length;
        return blend(last, painted[newOnes.indexOf(k)]!, k / added);
      });
    },
  );
}

/** The source at its length, every frame changed by the prompt's picture (EDIT_STRENGTH of it). */
export async function editVideoWebm(request: { source: Buffer; seed: string }): Promise<Buffer> {
  const { width, height, frames } = sourceClipOf(request.source);
  const scene = sceneFromSeed(request.seed);
  return muxVp8Frames(
    { width, height, fps: DEFAULT_FPS, seconds: frames.length / DEFAULT_FPS, frameCount: frames.length },
    async (indices) => {
      const painted = await paintFrames(
        scene,
        width,
        height,
        indices.map((i) => i / frames.length),
      );
      return Promise.all(
        indices.map(async (i, k) => blend(await decodeFrame(frames[i]!, width, height), painted[k]!, EDIT_STRENGTH)),
      );
    },
  );
}

/** `from` with `weight` (0 to 1) of `to`, pixel by pixel. */
function blend(from: Buffer, to: Buffer, weight: number): Buffer {
  if (from.length !== to.length) throw new MediaRequestError('frames of different sizes cannot be blended');
  const out = Buffer.allocUnsafe(from.length);
  for (let i = 0; i < from.length; i++) out[i] = Math.round(from[i]! + (to[i]! - from[i]!) * weight);
  return out;
}
