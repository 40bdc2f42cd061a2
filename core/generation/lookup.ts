import type { Queryable } from '../db/pool';
import { getGeneration, listSiblings } from '../db/generations';
import type { GenerationRow } from '../db/generations';
import { NotFoundError } from '../errors';
import { GENERATION_ID_PATTERN } from '../ids';

/** One of the account's generations; anything else (another account's, a malformed id) is not found. */
export async function readOwn(q: Queryable, accountId: string, id: string): Promise<GenerationRow> {
  const g = GENERATION_ID_PATTERN.test(id) ? await getGeneration(q, accountId, id) : undefined;
  if (!g) throw new NotFoundError(`Generation '${id}' not found.`, { param: 'id' });
  return g;
}

/** The generations of one admitted request, in request order: one, or a batch (group B's `n`). */
export async function readRequest(q: Queryable, accountId: string, firstId: string): Promise<GenerationRow[]> {
  const siblings = await listSiblings(q, accountId, firstId);
  return siblings.length > 0 ? siblings : [await readOwn(q, accountId, firstId)];
}
