import sharp from 'sharp';
import { paintFrame } from './paint-pool';
import { sceneFromSeed } from './seed';

/** Beyond this a request is a mistake, not a picture: a 16k RGB frame is already ~800 MB raw. */
export const MAX_IMAGE_SIDE = 8192;

/** A size, frame rate or length the renderers will not produce; permanent, so never worth a retry. */
export class MediaRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MediaRequestError';
  }
}

export interface ImageRequest {
  width: number;
  height: number;
  /** Any string; the prompt plus the generation id keeps outputs distinct and reproducible. */
  seed: string;
}

export async function renderImagePng({ width, height, seed }: ImageRequest): Promise<Buffer> {
  assertSide(width, 'width');
  assertSide(height, 'height');
  const raw = await paintFrame(sceneFromSeed(seed), width, height);
  // A smooth gradient compresses well with light zlib effort; the default level costs
  // several times the time for a few percent of bytes.
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 3 })
    .toBuffer();
}

function assertSide(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 1 || value > MAX_IMAGE_SIDE) {
    throw new MediaRequestError(`${name} must be an integer from 1 to ${MAX_IMAGE_SIDE}, got ${value}`);
  }
}
