import type pg from 'pg';
import type { GenerationRow } from '../../core/db/generations';
import { GenerationNotSucceededError, NotFoundError } from '../../core/errors';
import type { Principal } from '../../core/accounts/principal';
import { readOwn } from '../../core/generation/lookup';
import type { GenerationRequest } from './requests';
import type { SubmitOptions, Submitted } from './types';

/**
 * Remixing: a new video from a succeeded one of the account, with a new prompt and everything
 * else as the source ran (model, seconds, resolution, aspect). The new video is submitted like
 * any other, so it is priced, held, charged, listed and idempotent the same way. Both doors
 * (group A's and group B's remix routes) call this.
 */
export function createRemix({
  pool,
  submit,
}: {
  pool: pg.Pool;
  submit: (request: GenerationRequest, principal: Principal, opts: SubmitOptions) => Promise<Submitted>;
}) {
  return async (principal: Principal, id: string, prompt: string, opts: SubmitOptions): Promise<Submitted> => {
    const source = await readOwn(pool, principal.accountId, id);
    return submit(remixRequestOf(source, prompt), principal, opts);
  };
}

/** The request of a remix of `source`: a video of the account's that has succeeded. */
export function remixRequestOf(source: GenerationRow, prompt: string): Extract<GenerationRequest, { kind: 'video' }> {
  assertSucceededVideo(source, 'remixed');
  return { ...asTheSourceRan(source, prompt), remixedFrom: source.id };
}

/**
 * Only a succeeded video is remixed, extended or edited: any other generation is not a video the
 * caller could name (404), one still running or failed is a 409 naming its state.
 */
export function assertSucceededVideo(source: GenerationRow, action: 'remixed' | 'extended' | 'edited'): void {
  if (source.kind !== 'video') throw new NotFoundError(`Video '${source.id}' not found.`, { param: 'id' });
  if (source.status !== 'succeeded') throw new GenerationNotSucceededError(source.id, source.status, action);
}

/** A video request with `prompt` and everything else as `source` ran: model, seconds, resolution and aspect. */
export function asTheSourceRan(source: GenerationRow, prompt: string): Extract<GenerationRequest, { kind: 'video' }> {
  const p = source.params;
  return {
    kind: 'video',
    model: source.model,
    prompt,
    seconds: typeof p.seconds === 'number' ? p.seconds : undefined,
    quality: typeof p.resolution === 'string' ? p.resolution : undefined,
    aspect: typeof p.aspect === 'string' ? p.aspect : undefined,
  };
}
