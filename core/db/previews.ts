import { STATUS_CHANNEL } from './notify';
import type { Queryable } from './pool';
import type { VideoPreviewName } from '../vocabulary';

/**
 * Records where a generation's previews are stored. A retried provider step stores them again
 * under the same keys, so a repeat replaces the row.
 */
export async function recordPreviews(
  q: Queryable,
  generationId: string,
  previews: { name: VideoPreviewName; key: string }[],
): Promise<void> {
  if (previews.length === 0) return;
  await q.query(
    `INSERT INTO generation_previews (generation_id, name, storage_key)
     SELECT $1, name, storage_key FROM unnest($2::text[], $3::text[]) AS p (name, storage_key)
     ON CONFLICT (generation_id, name) DO UPDATE SET storage_key = EXCLUDED.storage_key`,
    [generationId, previews.map((p) => p.name), previews.map((p) => p.key)],
  );
}

/**
 * Records a running video's thumbnail, made from the provider's first frame before the run ends,
 * and announces it on the ledger's channel as `<accountId>:<generationId>:preview` in the same
 * statement, so live streams send the record with its thumbnail at once. A run that has ended
 * meanwhile records it all the same (the end keeps it) but announces nothing.
 */
export async function recordThumbnail(q: Queryable, generationId: string, key: string): Promise<void> {
  await q.query(
    `WITH up AS (
       INSERT INTO generation_previews (generation_id, name, storage_key) VALUES ($1, 'thumbnail', $2)
       ON CONFLICT (generation_id, name) DO UPDATE SET storage_key = EXCLUDED.storage_key
       RETURNING generation_id)
     SELECT pg_notify('${STATUS_CHANNEL}', g.account_id || ':' || g.id || ':preview')
       FROM generations g, up WHERE g.id = up.generation_id AND g.status = 'running'`,
    [generationId, key],
  );
}

/** The column that reads a generation's previews with it, as `{ name: key }` (null: none; only videos have any). */
export const PREVIEW_KEYS_COLUMN = `CASE WHEN generations.kind = 'video' THEN
    (SELECT jsonb_object_agg(p.name, p.storage_key) FROM generation_previews p WHERE p.generation_id = generations.id)
  END AS preview_keys`;
