import type { Principal } from '../../core/accounts/principal';
import type { PricedGeneration } from '../../core/generation/workflow-input';
import type { Admission, Admitted } from './admission';
import { priceRequest } from './requests';
import type { GenerationRequest, Serves } from './requests';
import type { PrepareCallback, SubmitOptions, SubmittedMany } from './types';
import { ServiceUnavailableError } from '../../core/errors';

/** Every generation of a request held and recorded, each with its workflow input. */
export type Held = Exclude<Admitted, { repeatOf: string }>;

/**
 * What one kind of submit adds to the pipeline: the work before the hold that is its own (an
 * input image fetched, an upstream stream opened early), how it starts once held, and how it
 * answers an Idempotency-Key repeat. `Ready` is what its work before the hold hands to its start.
 */
export interface SubmitKind<Options extends SubmitOptions, Ready, Answer> {
  /** Adds the kind's own to the priced generations and does its work before anything is held. */
  beforeHold(
    priced: PricedGeneration[],
    request: GenerationRequest,
    principal: Principal,
    opts: Options,
  ): Ready | Promise<Ready>;
  /** Nothing was held for this request (refused, or a concurrent repeat): undo what `beforeHold` began. */
  notHeld?(ready: Ready, why: 'not admitted' | 'a repeat'): void;
  /** Starts the held generations (their workflows, or the run the API does itself) and answers. */
  start(held: Held, ready: Ready, opts: Options): Answer | Promise<Answer>;
  /** An Idempotency-Key repeat: the first request's generations, as this kind answers them. */
  answerRepeat(first: SubmittedMany): Answer;
}

export interface PipelineDeps {
  /** Checks a callback URL named on the request; without it such a request is refused. */
  prepareCallback?: PrepareCallback | undefined;
  /** The gate and the hold (admission.ts). */
  admission: Pick<Admission, 'limitCustomer' | 'priorClaim' | 'admit' | 'firstGenerations'>;
  /** What the models' providers can do beyond the basics (function tools), as pricing asks. */
  serves: Serves;
}

/**
 * The one way a request becomes generations, whatever its kind and door: the customer's rate limit
 * and the Idempotency-Key, then the price, then the hold (the ledger's admission, all or none),
 * then the start. Each kind adds only its own steps; a refusal anywhere before the hold costs
 * nothing, and from the hold on the kind's start owns settle-or-release.
 */
export function createPipeline({ admission, serves, prepareCallback }: PipelineDeps) {
  return async function submit<Options extends SubmitOptions & { count?: number }, Ready, Answer>(
    kind: SubmitKind<Options, Ready, Answer>,
    request: GenerationRequest,
    principal: Principal,
    opts: Options,
  ): Promise<Answer> {
    await admission.limitCustomer(principal, opts);
    // A true repeat is answered without pricing (or fetching) anything again.
    const prior = await admission.priorClaim(principal, opts);
    if (prior !== undefined)
      return kind.answerRepeat(await admission.firstGenerations(principal.accountId, prior, opts));

    // A bad callback URL is refused before anything is priced, fetched or held.
    const callback =
      opts.callback && (await (prepareCallback ?? refuseCallbacks)(principal, opts.callback, 'generation'));
    const priced = Array.from({ length: opts.count ?? 1 }, () => priceRequest(request, principal, opts.door, serves));
    const ready = await kind.beforeHold(priced, request, principal, opts);

    let admitted: Admitted;
    try {
      admitted = await admission.admit(priced, principal, opts, callback);
    } catch (err) {
      kind.notHeld?.(ready, 'not admitted');
      throw err;
    }
    if ('repeatOf' in admitted) {
      kind.notHeld?.(ready, 'a repeat');
      return kind.answerRepeat(await admission.firstGenerations(principal.accountId, admitted.repeatOf, opts));
    }
    return kind.start(admitted, ready, opts);
  };
}

export type SubmitPipeline = ReturnType<typeof createPipeline>;

/** Where no callback check was configured (an instance without webhooks), a callback is refused. */
export const refuseCallbacks: PrepareCallback = () =>
  Promise.reject(new ServiceUnavailableError('Callback URLs are not configured on this instance.'));
