import { describe, it, expect } from 'vitest';
import sharp from 'sharp';
import { MediaRequestError, renderImagePng } from '../../../../core/media/png';
import { renderVideoWebm } from '../../../../core/media/webm';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('renderImagePng', () => {
  it('writes a PNG that decodes to the requested size', async () => {
    const png = await renderImagePng({ width: 640, height: 360, seed: 'a red fox|gen_1' });
    expect(png.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    const meta = await sharp(png).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 640, height: 360 });
  });

  it('gives the same bytes for the same seed and other pixels for another seed', async () => {
    const size = { width: 256, height: 256 };
    const a = await renderImagePng({ ...size, seed: 'seed-a' });
    const again = await renderImagePng({ ...size, seed: 'seed-a' });
    const b = await renderImagePng({ ...size, seed: 'seed-b' });
    expect(again.equals(a)).toBe(true);

    const pixelsA = await sharp(a).raw().toBuffer();
    const pixelsB = await sharp(b).raw().toBuffer();
    let differing = 0;
    for (let i = 0; i < pixelsA.length; i++) if (Math.abs(pixelsA[i]! - pixelsB[i]!) > 16) differing++;
    // "Visibly different", not a few stray bytes.
    expect(differing / pixelsA.length).toBeGreaterThan(0.3);
  });

  // How long it takes is the bench's to say (bench/simulator-cost.ts renders the same 1024² PNG).
  it('renders 1024x1024', async () => {
    const png = await renderImagePng({ width: 1024, height: 1024, seed: 'largest' });
    expect(await sharp(png).metadata()).toMatchObject({ format: 'png', width: 1024, height: 1024 });
  });

  it('refuses sizes it cannot produce', async () => {
    await expect(renderImagePng({ width: 0, height: 10, seed: 's' })).rejects.toBeInstanceOf(MediaRequestError);
    await expect(renderImagePng({ width: 10.5, height: 10, seed: 's' })).rejects.toBeInstanceOf(MediaRequestError);
  });
});

describe('renderVideoWebm', () => {
  it.each([
    { width: 320, height: 180, seconds: 5 },
    { width: 320, height: 180, seconds: 10 },
    { width: 180, height: 320, seconds: 5 },
  ])('muxes $seconds s of $width x $height VP8 keyframes at 6 fps', async ({ width, height, seconds }) => {
    const file = await renderVideoWebm({ width, height, seconds, seed: `clip ${width}x${height}` });
    const webm = parseWebm(file);

    expect(file.readUInt32BE(0)).toBe(0x1a45dfa3);
    expect(webm.docType).toBe('webm');
    expect(webm.codecId).toBe('V_VP8');
    expect({ width: webm.pixelWidth, height: webm.pixelHeight }).toEqual({ width, height });
    expect(webm.durationMs * (webm.timestampScale / 1e6)).toBe(seconds * 1000);

    const fps = 6;
    expect(webm.blocks).toHaveLength(seconds * fps);
    webm.blocks.forEach((block, i) => {
      expect(block.timestampMs).toBe(Math.floor((i * 1000) / fps));
      const frame = block.frame;
      // Bit 0 of the VP8 frame tag is 0 for a keyframe; the start code follows the 3-byte tag.
      expect(frame[0]! & 1).toBe(0);
      expect([...frame.subarray(3, 6)]).toEqual([0x9d, 0x01, 0x2a]);
      expect(frame.readUInt16LE(6) & 0x3fff).toBe(width);
      expect(frame.readUInt16LE(8) & 0x3fff).toBe(height);
    });

    // It plays as motion: frames differ from one another.
    const distinct = new Set(webm.blocks.map((b) => b.frame.toString('base64')));
    expect(distinct.size).toBeGreaterThan(webm.blocks.length / 2);
  });

  it('honours another frame rate', async () => {
    const webm = parseWebm(await renderVideoWebm({ width: 64, height: 64, seconds: 2, fps: 12, seed: 'fast' }));
    expect(webm.blocks).toHaveLength(24);
    expect(webm.durationMs).toBe(2000);
  });

  it('is deterministic for a seed', async () => {
    const request = { width: 96, height: 64, seconds: 1, seed: 'same' };
    expect((await renderVideoWebm(request)).equals(await renderVideoWebm(request))).toBe(true);
  });

  it('refuses odd sizes and impossible durations', async () => {
    await expect(renderVideoWebm({ width: 321, height: 180, seconds: 5, seed: 's' })).rejects.toBeInstanceOf(
      MediaRequestError,
    );
    await expect(renderVideoWebm({ width: 320, height: 180, seconds: 0, seed: 's' })).rejects.toBeInstanceOf(
      MediaRequestError,
    );
  });
});

// --- A minimal EBML reader, written for the test so it does not trust the code under test. ---

interface ParsedWebm {
  docType?: string;
  codecId?: string;
  pixelWidth?: number;
  pixelHeight?: number;
  timestampScale: number;
  durationMs: number;
  blocks: { timestampMs: number; frame: Buffer }[];
}

const ID = {
  EBML: 0x1a45dfa3,
  DocType: 0x4282,
  Segment: 0x18538067,
  Info: 0x1549a966,
  TimestampScale: 0x2ad7b1,
  Duration: 0x4489,
  Tracks: 0x1654ae6b,
  TrackEntry: 0xae,
  CodecID: 0x86,
  Video: 0xe0,
  PixelWidth: 0xb0,
  PixelHeight: 0xba,
  Cluster: 0x1f43b675,
  ClusterTimestamp: 0xe7,
  SimpleBlock: 0xa3,
};
const MASTERS = new Set([ID.EBML, ID.Segment, ID.Info, ID.Tracks, ID.TrackEntry, ID.Video, ID.Cluster]);

function parseWebm(file: Buffer): ParsedWebm {
  const out: ParsedWebm = { timestampScale: 1_000_000, durationMs: Number.NaN, blocks: [] };
  let clusterTimestamp = 0;

  const vint = (pos: number, keepMarker: boolean): [value: number, length: number] => {
    const first = file[pos]!;
    let length = 1;
    while (length <= 8 && !(first & (0x80 >> (length - 1)))) length++;
    let value = keepMarker ? first : first & (0xff >> length);
    for (let i = 1; i < length; i++) value = value * 256 + file[pos + i]!;
    return [value, length];
  };
  const uint = (start: number, size: number): number => file.readUIntBE(start, size);

  const walk = (start: number, end: number): void => {
    let pos = start;
    while (pos < end) {
      const [id, idLength] = vint(pos, true);
      const [size, sizeLength] = vint(pos + idLength, false);
      const data = pos + idLength + sizeLength;
      if (MASTERS.has(id)) walk(data, Math.min(data + size, file.length));
      else if (id === ID.DocType) out.docType = file.toString('latin1', data, data + size);
      else if (id === ID.CodecID) out.codecId = file.toString('latin1', data, data + size);
      else if (id === ID.PixelWidth) out.pixelWidth = uint(data, size);
      else if (id === ID.PixelHeight) out.pixelHeight = uint(data, size);
      else if (id === ID.TimestampScale) out.timestampScale = uint(data, size);
      else if (id === ID.Duration) out.durationMs = size === 8 ? file.readDoubleBE(data) : file.readFloatBE(data);
      else if (id === ID.ClusterTimestamp) clusterTimestamp = uint(data, size);
      else if (id === ID.SimpleBlock) {
        const [, trackLength] = vint(data, false);
        const relative = file.readInt16BE(data + trackLength);
        const flags = file[data + trackLength + 2]!;
        expect(flags & 0x80, 'SimpleBlock keyframe flag').toBe(0x80);
        out.blocks.push({
          timestampMs: clusterTimestamp + relative,
          frame: file.subarray(data + trackLength + 3, data + size),
        });
      }
      pos = data + size;
    }
  };

  walk(0, file.length);
  return out;
}
