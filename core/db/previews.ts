import type { Queryable } from './pool';
import type { VideoPreviewName } from '../vocabulary';

/**
 * Records where a generation's previews are stored. A retried provider step stores them again
 * under the same keys, so a repeat replaces the row.
 */
export async function recordPreviews(q: Queryable, generationId: string, previews: { name: VideoPreviewName; key: string }[]): Promise<void> {
  if (previews.length === 0) return;
  await q.query(
    `INSERT INTO generation_previews (generation_id, name, storage_key)
     SELECT $1, name, storage_key FROM unnest($2::text[], $3::text[]) AS p (name, storage_key)
     ON CONFLICT (generation_id, name) DO UPDATE SET storage_key = EXCLUDED.storage_key`,
    [generationId, previews.map((p) => p.name), previews.map((p) => p.key)],
  );
}

/** The column that reads a generation's previews with it, as `{ name: key }` (null: none). */
export const PREVIEW_KEYS_COLUMN = `(SELECT jsonb_object_agg(p.name, p.storage_key) FROM generation_previews p WHERE p.generation_id = generations.id) AS preview_keys`;
