import type { PublicParams } from '../generation/params';
import type { GenerationKind } from '../vocabulary';

// The estimate of a run's duration before the service has measured a model and size itself.

/** Per-resolution slowness of a video second, against 720p. */
const VIDEO_RESOLUTION_FACTOR: Record<string, number> = { '480p': 0.5, '720p': 1, '1080p': 2 };

/**
 * How long a run of this kind and size is expected to take, in seconds, until the service has
 * measured enough of them (core/db/durations.ts): a hosted provider's ballpark — an image ~10 s,
 * an upscale ~8 s, a chat reply ~5 s, a video ~30 s plus ~6 s per second of 720p (half at 480p,
 * twice at 1080p).
 */
export function defaultExpectedSeconds(kind: GenerationKind, params: PublicParams): number {
  switch (kind) {
    case 'image':
      return 10;
    case 'upscale':
      return 8;
    case 'chat':
      return 5;
    case 'video': {
      const seconds = params.seconds ?? 5;
      const factor = params.resolution === undefined ? 1 : (VIDEO_RESOLUTION_FACTOR[params.resolution] ?? 1);
      return Math.round(30 + 6 * seconds * factor);
    }
  }
}
