import sharp from 'sharp';
import { ArrayBufferTarget, Muxer } from 'webm-muxer';
import { MediaRequestError, MAX_IMAGE_SIDE } from './png';
import { paintFrames } from './paint-pool';
import { sceneFromSeed } from './seed';

/**
 * A browser-playable WebM (VP8) made without a native video encoder: a lossy WebP is a RIFF
 * wrapper around one VP8 keyframe, so sharp (libwebp) encodes each frame and webm-muxer puts the
 * bare VP8 frames in a WebM container. Every frame is a keyframe, which costs bytes, not
 * compatibility, and is fine for short previews.
 */

export const DEFAULT_FPS = 6;
const MAX_FPS = 60;
const MAX_SECONDS = 600;
/** Frames encoded at once: enough to keep libvips' threads busy without holding a whole clip of raw frames. */
const ENCODE_BATCH = 8;

export interface VideoRequest {
  width: number;
  height: number;
  seconds: number;
  fps?: number;
  seed: string;
}

export async function renderVideoWebm(request: VideoRequest): Promise<Buffer> {
  const { width, height, seconds, seed } = request;
  const fps = request.fps ?? DEFAULT_FPS;
  assertVideoShape(width, height, seconds, fps);

  const scene = sceneFromSeed(seed);
  const frameCount = Math.max(1, Math.round(seconds * fps));
  return muxVp8Frames({ width, height, fps, seconds, frameCount }, async (indices) =>
    paintFrames(
      scene,
      width,
      height,
      indices.map((i) => i / frameCount),
    ),
  );
}

/** The shape of a clip to mux: its size, rate, length and number of frames. */
export interface ClipShape {
  width: number;
  height: number;
  fps: number;
  seconds: number;
  frameCount: number;
}

/**
 * A WebM of `frameCount` frames, made a batch at a time by `frames`: each frame is raw RGB (encoded
 * here) or a VP8 keyframe already encoded (muxed as it is, so a frame taken from another file of
 * ours comes out byte for byte).
 */
export async function muxVp8Frames(
  clip: ClipShape,
  frames: (indices: number[]) => Promise<(Buffer | EncodedFrame)[]>,
): Promise<Buffer> {
  const { width, height, fps, seconds, frameCount } = clip;
  assertVideoShape(width, height, seconds, fps);
  const muxer = new Muxer({
    target: new ArrayBufferTarget(),
    video: { codec: 'V_VP8', width, height, frameRate: fps },
    firstTimestampBehavior: 'offset',
  });
  for (let first = 0; first < frameCount; first += ENCODE_BATCH) {
    const indices = Array.from({ length: Math.min(ENCODE_BATCH, frameCount - first) }, (_, k) => first + k);
    const made = await frames(indices);
    const encoded = await Promise.all(
      made.map(async (f) => (f instanceof EncodedFrame ? f.vp8 : encodeVp8Frame(f, width, height))),
    );
    // Muxed in order once the batch is done: the muxer wants timestamps that only increase.
    encoded.forEach((frame, k) => {
      muxer.addVideoChunkRaw(frame, 'key', Math.round(((first + k) * 1_000_000) / fps));
    });
  }
  muxer.finalize();
  const file = new Uint8Array(muxer.target.buffer);
  setSegmentDuration(file, seconds * 1000);
  return Buffer.from(file.buffer, file.byteOffset, file.byteLength);
}

/** A VP8 keyframe that is already encoded. */
export class EncodedFrame {
  constructor(readonly vp8: Uint8Array) {}
}

/**
 * The clip's first frame alone, as a lossy WebP (the same encode as the file's frame): what the
 * simulator hands over as its preview before the run ends.
 */
export async function renderFirstFrameWebp(request: VideoRequest): Promise<Buffer> {
  const { width, height, seed } = request;
  assertVideoShape(width, height, request.seconds, request.fps ?? DEFAULT_FPS);
  const [raw] = await paintFrames(sceneFromSeed(seed), width, height, [0]);
  return sharp(raw as Buffer, { raw: { width, height, channels: 3 } })
    .webp({ quality: 80, effort: 0 })
    .toBuffer();
}

function assertVideoShape(width: number, height: number, seconds: number, fps: number): void {
  for (const [name, side] of [
    ['width', width],
    ['height', height],
  ] as const) {
    // VP8 itself allows odd sizes, but 4:2:0 chroma and many players do not handle them well.
    if (!Number.isInteger(side) || side < 2 || side > MAX_IMAGE_SIDE || side % 2 !== 0) {
      throw new MediaRequestError(`${name} must be an even integer from 2 to ${MAX_IMAGE_SIDE}, got ${side}`);
    }
  }
  if (!Number.isInteger(fps) || fps < 1 || fps > MAX_FPS) {
    throw new MediaRequestError(`fps must be an integer from 1 to ${MAX_FPS}, got ${fps}`);
  }
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_SECONDS) {
    throw new MediaRequestError(`seconds must be above 0 and at most ${MAX_SECONDS}, got ${seconds}`);
  }
}

async function encodeVp8Frame(raw: Buffer, width: number, height: number): Promise<Uint8Array> {
  const webp = await sharp(raw, { raw: { width, height, channels: 3 } })
    // Lowest effort: the frames are flat gradients, and this is the per-frame cost of the clip.
    .webp({ quality: 80, effort: 0 })
    .toBuffer();
  return vp8Payload(webp);
}

/** The `VP8 ` chunk of a lossy WebP, which is exactly one VP8 keyframe. */
function vp8Payload(webp: Buffer): Uint8Array {
  if (webp.toString('latin1', 0, 4) !== 'RIFF' || webp.toString('latin1', 8, 12) !== 'WEBP') {
    throw new Error('sharp did not return a WebP file');
  }
  let pos = 12;
  while (pos + 8 <= webp.length) {
    const fourcc = webp.toString('latin1', pos, pos + 4);
    const size = webp.readUInt32LE(pos + 4);
    if (fourcc === 'VP8 ') return webp.subarray(pos + 8, pos + 8 + size);
    // RIFF chunks are padded to an even length.
    pos += 8 + size + (size & 1);
  }
  throw new Error('the WebP holds no lossy VP8 frame');
}

const SEGMENT_ID = 0x18538067;
const INFO_ID = 0x1549a966;
const DURATION_ID = 0x4489;

/**
 * webm-muxer records the last frame's timestamp as the segment duration, which leaves the clip one
 * frame short (9.83 s for 10 s at 6 fps) in players and probes. The file is ours and the element's
 * width is fixed, so the duration is rewritten in place rather than adding a frame.
 */
function setSegmentDuration(file: Uint8Array, ms: number): void {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const ebmlHeader = readElementHeader(file, 0);
  const segment = readElementHeader(file, ebmlHeader.dataStart + ebmlHeader.size);
  if (segment.id !== SEGMENT_ID) throw new Error('WebM without a Segment after its header');

  for (let pos = segment.dataStart; pos < file.length;) {
    const child = readElementHeader(file, pos);
    if (child.id === INFO_ID) {
      const infoEnd = child.dataStart + child.size;
      for (let p = child.dataStart; p < infoEnd;) {
        const el = readElementHeader(file, p);
        if (el.id === DURATION_ID) {
          if (el.size === 8) view.setFloat64(el.dataStart, ms);
          else if (el.size === 4) view.setFloat32(el.dataStart, ms);
          else throw new Error(`unexpected Duration width ${el.size}`);
          return;
        }
        p = el.dataStart + el.size;
      }
      break;
    }
    pos = child.dataStart + child.size;
  }
  throw new Error('WebM Segment has no Info/Duration element');
}

interface ElementHeader {
  id: number;
  size: number;
  dataStart: number;
}

function readElementHeader(file: Uint8Array, pos: number): ElementHeader {
  const id = readVint(file, pos, true);
  const size = readVint(file, pos + id.length, false);
  return { id: id.value, size: size.value, dataStart: pos + id.length + size.length };
}

/** An EBML variable-length integer; IDs keep their length marker bit, sizes drop it. */
function readVint(file: Uint8Array, pos: number, keepMarker: boolean): { value: number; length: number } {
  const first = file[pos];
  if (first === undefined || first === 0) throw new Error(`bad EBML integer at ${pos}`);
  const length = Math.clz32(first) - 23;
  let value = keepMarker ? first : first & (0xff >> length);
  for (let i = 1; i < length; i++) value = value * 256 + (file[pos + i] ?? 0);
  return { value, length };
}
