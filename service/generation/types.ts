import type pg from 'pg';
import type { Principal } from '../../core/accounts/principal';
import type { InternalParams, PublicParams } from '../../core/generation/params';
import type { OutputStore } from '../../core/storage/output-store';
import type { Plan } from '../../core/plans';
import type { Provider } from '../../core/providers/types';
import type { Door, GenerationKind, GenerationStatus } from '../../core/vocabulary';
import type { GenerationView } from '../../core/generation/view';
import type { GenerationGateway } from './temporal-gateway';
import type { PricedGeneration } from '../../core/generation/workflow-input';
import type { CallbackJob, JobCallback, RequestedCallback } from '../../core/webhooks/job-callbacks';
import type { StartPaceOptions } from './start-pace';

/** What the generation service takes and gives: shared by its parts and by the doors that call it. */

/** Sliding 60 s windows by bucket, as the API's rate limiter keeps them (in process, or in Redis for every instance). */
export interface RateWindows {
  check(bucket: string, limit: number): Promise<{ refused?: Error | undefined }>;
}

export interface GenerationServiceDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  /** How long a submit waits for an image or chat to finish before answering its current state. */
  syncWaitMs: number;
  /** How long a cancel waits for the workflow to release the hold before answering. */
  cancelWaitMs?: number;
  /** Per kind, how long a generation may stay in flight before it fails with `timeout`. */
  deadlines?: Partial<Record<GenerationKind, number>>;
  /** Fetches and checks input images (upscale, image-to-video, an edit's) before anything is held; without it those are refused. */
  prepareInput?: (priced: PricedGeneration, uploaded?: Buffer, edit?: EditSources) => Promise<PreparedInput>;
  /** Runs the chats the API streams itself (group B); the simulator when not given. */
  provider?: Provider;
  /** The API's rate windows: customers' rate limits are counted in them; without them none is enforced. */
  rateWindows?: RateWindows;
  /** Where trouble that no client hears of is told (e.g. a report Temporal did not take). */
  log?: (message: string, err: unknown) => void;
  /** How an account's starts past what it can run are spread (service/generation/start-pace.ts); without it none is. */
  startPace?: Omit<StartPaceOptions, 'now'>;
  /** Checks a callback URL named on a submit (service/webhooks/job-callbacks.ts); without it such a submit is refused. */
  prepareCallback?: PrepareCallback;
}

/** Checks a requested callback before anything is held: address policy, event filter, the account's callback secret. */
export type PrepareCallback = (
  principal: Principal,
  requested: RequestedCallback,
  job: CallbackJob,
) => Promise<JobCallback>;

/** One input image of an edit: a URL to fetch, or bytes the request carried (an upload, an earlier output). */
export type EditSource = { url: string } | { file: Buffer };
export interface EditSources {
  /** The image edited first, then any references. */
  images: EditSource[];
  /** Where to edit: its transparent pixels. */
  mask?: EditSource | undefined;
}

/** An input fetched and checked before the hold: stored once the generation exists. */
export interface PreparedInput {
  /** What the input adds to what the client sees: its size (an upscale's output size too). */
  params: PublicParams;
  /** Stores the input under the admitted generation: where it is kept. */
  store: (generationId: string) => Promise<InternalParams>;
}

export interface SubmitOptions {
  door: Door;
  /** The Idempotency-Key header, with the door's route and body so that a true repeat is recognised. */
  idempotency?: { key: string; route: string; body: unknown } | undefined;
  /** Answer at once (RFC 7240 `Prefer: respond-async`) instead of waiting for an image or chat. */
  respondAsync?: boolean | undefined;
  /** An input image sent with the request itself (group B's `input_reference` file), instead of a URL. */
  inputFile?: Buffer | undefined;
  /**
   * The client's deadline (`Cancel-After`, `deadline_seconds`), in ms from the start: the workflow's
   * deadline becomes the sooner of it and the kind's own. Kept in the generation's params.
   */
  deadlineMs?: number | undefined;
  /** The request's own spending cap (`max_credits`, as the door names it): a quote above it is refused before any hold. */
  spendCap?: { credits: number; param: string } | undefined;
  /**
   * The platform's own end user the request is for (`customer`, group B's `user` or
   * `safety_identifier`, or `X-Customer-Id`): stored with the generation, held against the
   * customer's budget and rate limit.
   */
  customer?: string | undefined;
  /** A callback URL named on the job: its events go there too (checked before anything is held, recorded with it). */
  callback?: RequestedCallback | undefined;
  /** The request's logger: admission lines carry its request id next to the generation id. */
  log?: { info(obj: object, msg: string): void; warn?(obj: object, msg: string): void } | undefined;
}

export interface Submitted {
  generation: GenerationView;
  /** True when an Idempotency-Key repeat returned an earlier generation. */
  repeated: boolean;
}

export interface SubmittedMany {
  /** In request order. */
  generations: GenerationView[];
  repeated: boolean;
}

export interface ListQuery {
  limit: number;
  /** The opaque `next_cursor` of the previous page (group A). */
  cursor?: string | undefined;
  /** The previous page's last generation id, as OpenAI's lists take `after` (group B). */
  after?: string | undefined;
  kind?: GenerationKind | undefined;
  status?: GenerationStatus | undefined;
  /** Only the generations made for this customer of the account. */
  customer?: string | undefined;
  order?: 'asc' | 'desc' | undefined;
}

export interface FollowOptions {
  /** How long to wait at most; past it the generation is answered as it is then. */
  waitMs: number;
  /** Called with the generation in each status it is seen in, the first one included. */
  onStatus?: ((g: GenerationView) => Promise<void> | void) | undefined;
  /** Ends the wait early (the caller went away). */
  signal?: AbortSignal | undefined;
}

/** What a request would cost now, priced exactly as `submit` prices it, with nothing held. */
export interface Quote {
  kind: GenerationKind;
  /** The model that would run (canonical id; the free model while the chat allowance lasts). */
  model: string;
  credits: number;
  /** A chat reply the free allowance would cover. */
  free: boolean;
  /** What would be run after pricing: clamped seconds, resolution, snapped aspect, size… */
  params: PublicParams;
  /** Credits that can be spent now, and whether they cover the quote. */
  balance: number;
  affordable: boolean;
}

export interface Balance {
  balance: number;
  holdsActive: number;
  plan: Plan;
  trial: { chatCap: number; chatUsed: number; chatLeft: number };
}
