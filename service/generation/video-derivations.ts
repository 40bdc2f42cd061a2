import type pg from 'pg';
import type { GenerationRow } from '../../core/db/generations';
import { InvalidRequestError, NotFoundError } from '../../core/errors';
import type { Principal } from '../../core/accounts/principal';
import { readOwn } from '../../core/generation/lookup';
import { resolveModel } from '../../core/catalogue/models';
import type { Door } from '../../core/vocabulary';
import { assertSucceededVideo, asTheSourceRan } from './remix';
import type { GenerationRequest, VideoSource } from './requests';
import type { SubmitOptions, Submitted } from './types';

type Submit = (request: GenerationRequest, principal: Principal, opts: SubmitOptions) => Promise<Submitted>;

/**
 * Videos made from a succeeded one of the account, each a new generation submitted like any video
 * (priced, held before it runs, charged on success, released on failure, listed, idempotent):
 *
 * - an extension: the source continued by `seconds` more, priced as that many seconds of its model
 *   at its resolution (clamped to the model's range); the file is the source followed by them.
 * - an edit: the source changed by a prompt, priced as a run of its length.
 *
 * Both keep the source's model, resolution and aspect and name it in their parameters
 * (`extendedFrom`, `editedFrom`). Group A's and group B's routes call these.
 */
export function createVideoDerivations({ pool, submit }: { pool: pg.Pool; submit: Submit }) {
  return {
    async extend(
      principal: Principal,
      id: string,
      change: { prompt: string; seconds: number; model?: string | undefined },
      opts: SubmitOptions,
    ): Promise<Submitted> {
      assertExtensionSeconds(change.seconds);
      const source = await readOwn(pool, principal.accountId, id);
      assertSucceededVideo(source, 'extended');
      if (change.model !== undefined) assertSameModel(source, change.model, opts.door);
      const request = {
        ...asTheSourceRan(source, change.prompt),
        seconds: change.seconds,
        derivedFrom: videoSourceOf(source, 'extension'),
      };
      return submit(request, principal, opts);
    },

    async edit(principal: Principal, id: string, prompt: string, opts: SubmitOptions): Promise<Submitted> {
      const source = await readOwn(pool, principal.accountId, id);
      assertSucceededVideo(source, 'edited');
      const derivedFrom = videoSourceOf(source, 'edit');
      return submit({ ...asTheSourceRan(source, prompt), seconds: derivedFrom.seconds, derivedFrom }, principal, opts);
    },
  };
}

/** Seconds to add: a whole number above zero (clamped to the model's range when priced). */
function assertExtensionSeconds(seconds: number): void {
  if (!Number.isSafeInteger(seconds) || seconds < 1)
    throw new InvalidRequestError(`seconds must be a whole number of seconds above 0, got ${seconds}.`, 'seconds');
}

/** A request that names a model (one that creates videos, used to extend) must name the source's, by any of its ids. */
function assertSameModel(source: GenerationRow, model: string, door: Door): void {
  if (resolveModel('video', model, door)?.id === source.model) return;
  throw new InvalidRequestError(
    `model: the video '${source.id}' ran ${source.model}, and an extension keeps its model; name it or leave model out.`,
    'model',
  );
}

/** A succeeded video as the source of another: its length (the whole file, an extended one's stitched) and its file. */
function videoSourceOf(source: GenerationRow, how: VideoSource['how']): VideoSource {
  const p = source.params;
  // A succeeded video has a file unless it was deleted, and a deleted one is not found.
  if (!source.outputKey) throw new NotFoundError(`Video '${source.id}' not found.`, { param: 'id' });
  return { how, id: source.id, seconds: p.stitchedSeconds ?? p.seconds ?? 0, outputKey: source.outputKey };
}
