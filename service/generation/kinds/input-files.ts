import type pg from 'pg';
import { keepInternal } from '../../../core/db/generations';
import { InvalidRequestError, ServiceUnavailableError } from '../../../core/errors';
import { readOwn } from '../../../core/generation/lookup';
import type { PricedGeneration } from '../../../core/generation/workflow-input';
import { release } from '../../../core/ledger';
import type { Principal } from '../../../core/accounts/principal';
import type { OutputStore } from '../../../core/storage/output-store';
import type { GenerationWorkflowInput } from '../../../core/workflow-contract';
import type { EditInput, GenerationRequest } from '../requests';
import type { EditSource, EditSources, GenerationServiceDeps, PreparedInput } from '../types';

export interface InputFilesDeps {
  pool: pg.Pool;
  store: OutputStore;
  prepareInput?: GenerationServiceDeps['prepareInput'];
}

/**
 * The input images some kinds carry (an upscale's image, a video's reference frame, an image
 * edit's images and mask): fetched and checked before anything is held, so that a bad one is a 400
 * with nothing charged, and stored under the generation once it exists.
 */
export function createInputFiles(deps: InputFilesDeps) {
  const { pool, store } = deps;

  /** An edit's inputs as sources to fetch or bytes; an earlier output of the account is read from the store. */
  const editSources = async (principal: Principal, request: GenerationRequest): Promise<EditSources | undefined> => {
    if (request.kind !== 'image' || !request.edit) return undefined;
    const sourceOf = async (input: EditInput, field: string, which: string): Promise<EditSource> => {
      if (!('generation' in input)) return input;
      const g = await readOwn(pool, principal.accountId, input.generation).catch(() => undefined);
      const data = g?.kind === 'image' && g.outputKey ? await store.get(g.outputKey) : undefined;
      if (!data)
        throw new InvalidRequestError(
          `${field}${which}: '${input.generation}' is not a succeeded image generation of this account.`,
          field,
        );
      return { file: data };
    };
    const { images, mask } = request.edit;
    return {
      images: await Promise.all(images.map((input, i) => sourceOf(input, 'editImages', ` (image ${i + 1})`))),
      ...(mask ? { mask: await sourceOf(mask, 'editMask', '') } : {}),
    };
  };

  return {
    /** Fetches and checks the request's input, if it has one, and adds what it tells (its size) to the priced parameters. */
    async prepare(
      priced: PricedGeneration,
      request: GenerationRequest,
      principal: Principal,
      uploaded: Buffer | undefined,
    ): Promise<PreparedInput | undefined> {
      const edit = await editSources(principal, request);
      const needsInput =
        edit !== undefined ||
        priced.kind === 'upscale' ||
        (priced.kind === 'video' && (priced.params.imageUrl !== undefined || uploaded !== undefined));
      if (!needsInput) return undefined;
      if (!deps.prepareInput)
        throw new ServiceUnavailableError('Fetching input images is not available on this instance.');
      const prepared = await deps.prepareInput(priced, uploaded, edit);
      priced.params = { ...priced.params, ...prepared.params, ...keptSize(request, prepared.params) };
      return prepared;
    },

    /**
     * Stores a prepared input under the admitted generation, and where it is with the generation's
     * record (a workflow started again from the record finds it); the hold goes back if that fails.
     */
    async store(input: GenerationWorkflowInput, prepared: PreparedInput): Promise<void> {
      try {
        const kept = await prepared.store(input.generationId);
        await keepInternal(pool, input.generationId, kept);
        input.internal = { ...input.internal, ...kept };
      } catch (err) {
        await release(pool, input.generationId, {
          code: 'input_unavailable',
          message: 'The input could not be stored; nothing was charged.',
          retryable: true,
        });
        throw new ServiceUnavailableError('The input could not be stored; nothing was charged. Retry shortly.', {
          cause: err,
        });
      }
    },
  };
}

/**
 * An edit that asks no size keeps its input's, and its record says so: the priced parameters
 * otherwise carry the model's default size, which the edit does not make.
 */
function keptSize(request: GenerationRequest, found: PreparedInput['params']): { width?: number; height?: number } {
  if (request.kind !== 'image' || !request.edit || request.width !== undefined) return {};
  const { inputWidth, inputHeight } = found;
  return inputWidth === undefined || inputHeight === undefined ? {} : { width: inputWidth, height: inputHeight };
}
