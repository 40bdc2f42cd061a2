import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { recordPreviews, recordThumbnail } from '../../core/db/previews';
import { previewsOfVideo, thumbnailOfFrame } from '../../core/media/video-previews';
import type { ProviderFile } from '../../core/providers/types';
import type { OutputStore } from '../../core/storage/output-store';
import { VIDEO_PREVIEWS } from '../../core/vocabulary';

/**
 * A video's thumbnail from the provider's first frame, before the run ends: made, stored and
 * announced once per attempt, off the run's path (the run never waits for it, and a failure is
 * only logged: the end of the run makes it from the file instead). `made()` says whether it is
 * stored, once whatever was started has finished.
 */
export function earlyThumbnail(
  pool: pg.Pool,
  store: OutputStore,
  generationId: string,
  log: (message: string, meta: object) => void,
) {
  let making: Promise<boolean> | undefined;
  return {
    offer(frame: ProviderFile): void {
      making ??= (async () => {
        const image = await thumbnailOfFrame(frame.data);
        const key = `${generationId}/thumbnail.${image.extension}`;
        await store.put(key, image.data, image.contentType);
        await recordThumbnail(pool, generationId, key);
        return true;
      })().catch((err: unknown) => {
        log('the early thumbnail could not be made', { generationId, error: (err as Error).message });
        return false;
      });
    },
    made: (): Promise<boolean> => making ?? Promise.resolve(false),
  };
}

/**
 * A video's thumbnail and spritesheet, stored beside it and recorded before the run reports
 * success, so a succeeded video has them from its first read. A file they cannot be made from
 * (not VP8 WebM, or unreadable) has none: the video itself is what was paid for. A thumbnail
 * stored while the run went on (its first frame) stands and is not made again.
 */
export async function storePreviews(
  { store, pool }: { store: OutputStore; pool: pg.Pool },
  generationId: string,
  file: ProviderFile,
  haveThumbnail: boolean,
): Promise<void> {
  const ctx = Context.current();
  // Making them may wait for one of the few image slots behind other videos' previews: the run
  // keeps saying it is alive meanwhile, or its heartbeat timeout would retry a finished render.
  const alive = setInterval(() => ctx.heartbeat(), 2_000);
  const previews = await previewsOfVideo(file, { thumbnail: !haveThumbnail })
    .catch((err: unknown) => {
      ctx.log.warn('video previews could not be made', { generationId, error: (err as Error).message });
      return undefined;
    })
    .finally(() => clearInterval(alive));
  if (!previews) {
    ctx.log.info('no video previews', { generationId, contentType: file.contentType });
    return;
  }
  const stored = await Promise.all(
    VIDEO_PREVIEWS.flatMap((name) => {
      const image = previews[name];
      return image ? [{ name, image }] : [];
    }).map(async ({ name, image }) => {
      const key = `${generationId}/${name}.${image.extension}`;
      await store.put(key, image.data, image.contentType);
      return { name, key };
    }),
  );
  await recordPreviews(pool, generationId, stored);
}
