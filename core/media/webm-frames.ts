/**
 * The VP8 keyframes of a WebM file, found without a video decoder. A VP8 keyframe is a complete
 * picture, and a lossy WebP is exactly one VP8 keyframe in a RIFF wrapper, so sharp (libwebp)
 * decodes each one. Inter frames (the deltas between keyframes) need a real decoder and are
 * skipped: a file made only of keyframes (the simulator's) gives every frame, a typical encode
 * gives its first frame and one picture every few seconds. VP9, AV1 and MP4 give none.
 */

const EBML_ID = 0x1a45dfa3;
const SEGMENT_ID = 0x18538067;
const TRACKS_ID = 0x1654ae6b;
const TRACK_ENTRY_ID = 0xae;
const TRACK_NUMBER_ID = 0xd7;
const CODEC_ID = 0x86;
const CLUSTER_ID = 0x1f43b675;
const BLOCK_GROUP_ID = 0xa0;
const BLOCK_ID = 0xa1;
const SIMPLE_BLOCK_ID = 0xa3;
/** Elements whose children are read in place; every other element is stepped over whole. */
const MASTERS = new Set([SEGMENT_ID, TRACKS_ID, TRACK_ENTRY_ID, CLUSTER_ID, BLOCK_GROUP_ID]);

/** The VP8 keyframes of the file's first VP8 track, in order; empty for anything else. */
export function vp8Keyframes(file: Uint8Array): Uint8Array[] {
  if (file.length < 4 || readVint(file, 0, true)?.value !== EBML_ID) return [];
  const vp8Tracks = new Set<number>();
  let entry: { number?: number; codec?: string } | undefined;
  let entryEnd = 0;
  const frames: Uint8Array[] = [];
  for (let pos = 0; pos < file.length;) {
    const el = readElementHeader(file, pos);
    if (!el) break;
    // A TrackEntry is complete once the scan leaves it.
    if (entry && pos >= entryEnd) {
      if (entry.codec === 'V_VP8' && entry.number !== undefined) vp8Tracks.add(entry.number);
      entry = undefined;
    }
    const end = el.size === undefined ? file.length : Math.min(file.length, el.dataStart + el.size);
    if (el.id === TRACK_ENTRY_ID) {
      entry = {};
      entryEnd = end;
    } else if (entry && el.id === TRACK_NUMBER_ID) {
      entry.number = readUint(file, el.dataStart, end);
    } else if (entry && el.id === CODEC_ID) {
      entry.codec = Buffer.from(file.subarray(el.dataStart, end)).toString('latin1').replace(/\0+$/, '');
    } else if (el.id === SIMPLE_BLOCK_ID || el.id === BLOCK_ID) {
      const frame = blockFrame(file, el.dataStart, end, vp8Tracks);
      if (frame && isVp8Keyframe(frame)) frames.push(frame);
    }
    // Masters are entered (their size may be unknown, as in live-written files); leaves skipped.
    pos = MASTERS.has(el.id) ? el.dataStart : end;
  }
  return frames;
}

/** One VP8 keyframe as a lossy WebP file, which sharp decodes. */
export function webpOfVp8Keyframe(frame: Uint8Array): Buffer {
  const pad = frame.length & 1;
  const header = Buffer.alloc(20);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(4 + 8 + frame.length + pad, 4);
  header.write('WEBP', 8, 'latin1');
  header.write('VP8 ', 12, 'latin1');
  header.writeUInt32LE(frame.length, 16);
  return Buffer.concat([header, frame, Buffer.alloc(pad)]);
}

/** The frame of an unlaced (Simple)Block of one of `tracks`; laced blocks carry audio, not VP8. */
function blockFrame(file: Uint8Array, start: number, end: number, tracks: ReadonlySet<number>): Uint8Array | undefined {
  const track = readVint(file, start, false);
  if (!track || !tracks.has(track.value)) return undefined;
  const flags = file[start + track.length + 2];
  if (flags === undefined || (flags & 0x06) !== 0) return undefined;
  return file.subarray(start + track.length + 3, end);
}

/** A VP8 frame tag with the key-frame bit clear, followed by the keyframe start code 9d 01 2a. */
function isVp8Keyframe(frame: Uint8Array): boolean {
  return frame.length > 10 && (frame[0]! & 1) === 0 && frame[3] === 0x9d && frame[4] === 0x01 && frame[5] === 0x2a;
}

interface ElementHeader {
  id: number;
  /** Undefined when the element's size is unknown (all ones). */
  size: number | undefined;
  dataStart: number;
}

function readElementHeader(file: Uint8Array, pos: number): ElementHeader | undefined {
  const id = readVint(file, pos, true);
  if (!id) return undefined;
  const size = readVint(file, pos + id.length, false);
  if (!size) return undefined;
  return { id: id.value, size: size.unknown ? undefined : size.value, dataStart: pos + id.length + size.length };
}

/** An EBML variable-length integer; IDs keep their length marker bit, sizes drop it. Undefined past the end or when malformed. */
function readVint(
  file: Uint8Array,
  pos: number,
  keepMarker: boolean,
): { value: number; length: number; unknown: boolean } | undefined {
  const first = file[pos];
  if (first === undefined || first === 0) return undefined;
  const length = Math.clz32(first) - 23;
  if (pos + length > file.length) return undefined;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const byte = file[pos + i]!;
    allOnes &&= byte === 0xff;
    value = value * 256 + byte;
  }
  return { value, length, unknown: !keepMarker && allOnes };
}

function readUint(file: Uint8Array, start: number, end: number): number {
  let value = 0;
  for (let p = start; p < end; p++) value = value * 256 + file[p]!;
  return value;
}

/** A VP8 keyframe's picture size, from its header (14 bits each after the start code); undefined if unreadable. */
export function vp8KeyframeSize(frame: Uint8Array): { width: number; height: number } | undefined {
  if (!isVp8Keyframe(frame)) return undefined;
  const width = (frame[6]! | (frame[7]! << 8)) & 0x3fff;
  const height = (frame[8]! | (frame[9]! << 8)) & 0x3fff;
  return width > 0 && height > 0 ? { width, height } : undefined;
}
