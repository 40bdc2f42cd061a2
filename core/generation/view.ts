import { defaultExpectedSeconds } from '../catalogue/expected-durations';
import type { GenerationRow } from '../db/generations';
import { publicParamsOf } from './params';
import type { PublicParams } from './params';
import { mcToCredits } from '../money';
import type { OutputStore } from '../storage/output-store';
import { tokenUsageOf } from '../providers/token-usage';
import type { GenerationFailure, GenerationKind, GenerationStatus, TokenUsage, VideoPreviewName } from '../vocabulary';

/** A generation as every door may show it; each door picks and names the fields of its shape. */
export interface GenerationView {
  id: string;
  kind: GenerationKind;
  model: string;
  status: GenerationStatus;
  /** The platform's own end user it was made for, as the platform named it; null when none was. */
  customer: string | null;
  /** The prompt as run (chat: the conversation as one text). */
  prompt: string;
  /** A fresh signed URL on every read; empty until the generation has succeeded. */
  outputUrl: string;
  /**
   * A video's first frame (JPEG), signed like the output: from the moment the provider has it,
   * while the video still runs, until it succeeds and after; null when there is none (or it failed).
   */
  thumbnailUrl: string | null;
  /** A succeeded video's frames in a grid (JPEG), signed like the output; null when there is none. */
  spritesheetUrl: string | null;
  creditsCharged: number;
  creditsQuoted: number;
  error: GenerationFailure | null;
  /** The reply of a chat generation. */
  text: string | null;
  /** What the client asked for, as priced and run (core/generation/params.ts). */
  params: PublicParams;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /**
   * 0–100: the provider's own progress where it reports one, else estimated by the provider step
   * from elapsed time against the expected duration; recorded so it never goes back. 100 only
   * when succeeded; a failed generation keeps where it stopped.
   */
  progress: number;
  /** A queued video's place in its account's queue for a slot (1 = next); null otherwise. */
  queuePosition: number | null;
  /** Seconds until it is expected to finish (at least 1 while in flight); null once finished. */
  etaSeconds: number | null;
  /** When it is expected to finish: now plus etaSeconds; null once finished. */
  expectedAt: Date | null;
  /** The configured upstream that served it; null when the simulator did, or nothing has yet. */
  servedBy: string | null;
  /** The batch whose line it ran (group B's Batch API), or null. */
  batchId: string | null;
  /**
   * A succeeded chat's tokens in detail: as its provider counted them, or, for one settled without
   * them, the output charged for and the input estimated. Null for other kinds and until succeeded.
   */
  usage: TokenUsage | null;
}

/** Video slots per account (VIDEO_CONCURRENCY's default): a queued video waits about expected × position / slots. */
const ESTIMATE_SLOTS = 5;

/**
 * When an unfinished generation should be done: its expected duration (the median the service
 * measured for the model and size, else the catalogue's default) less the time it has run; a
 * queued one adds the run, and a queued video its wait for a slot (a slot frees about every
 * expected / 5 seconds when all five are busy).
 */
export function estimateOf(
  g: GenerationRow,
  now: number,
): Pick<GenerationView, 'progress' | 'queuePosition' | 'etaSeconds' | 'expectedAt'> {
  const progress = g.status === 'succeeded' ? 100 : Math.min(99, g.progressPercent ?? 0);
  if (g.status === 'succeeded' || g.status === 'failed')
    return { progress, queuePosition: null, etaSeconds: null, expectedAt: null };
  const expected = g.measuredSeconds ?? defaultExpectedSeconds(g.kind, g.params);
  const queuePosition = g.status === 'queued' ? g.queuePosition : null;
  const left =
    g.status === 'running' && g.startedAt
      ? expected - (now - g.startedAt.getTime()) / 1000
      : expected + (queuePosition === null ? 0 : (expected * queuePosition) / ESTIMATE_SLOTS);
  const etaSeconds = Math.max(1, Math.round(left));
  return { progress, queuePosition, etaSeconds, expectedAt: new Date(now + etaSeconds * 1000) };
}

export async function viewOf(g: GenerationRow, store: OutputStore): Promise<GenerationView> {
  return {
    id: g.id,
    kind: g.kind,
    model: g.model,
    status: g.status,
    customer: g.customerId,
    prompt: g.prompt,
    outputUrl: g.status === 'succeeded' && g.outputKey ? await store.signedUrl(g.outputKey) : '',
    thumbnailUrl: await previewUrl(g, 'thumbnail', store),
    spritesheetUrl: await previewUrl(g, 'spritesheet', store),
    creditsCharged: mcToCredits(g.chargedMc),
    creditsQuoted: mcToCredits(g.quoteMc),
    error: g.status === 'failed' ? g.error : null,
    text: g.kind === 'chat' ? g.outputText : null,
    params: publicParamsOf(g.params),
    createdAt: g.createdAt,
    startedAt: g.startedAt,
    finishedAt: g.finishedAt,
    ...estimateOf(g, Date.now()),
    servedBy: g.status === 'succeeded' ? g.servedBy : null,
    batchId: g.batchId,
    usage: chatUsageOf(g),
  };
}

function chatUsageOf(g: GenerationRow): TokenUsage | null {
  if (g.kind !== 'chat' || g.status !== 'succeeded') return null;
  return g.tokenUsage ?? tokenUsageOf(undefined, { prompt: g.prompt, charged: g.params.outputTokens ?? 0 });
}

async function previewUrl(g: GenerationRow, name: VideoPreviewName, store: OutputStore): Promise<string | null> {
  const key = g.previewKeys[name];
  const shown = g.status === 'succeeded' || (name === 'thumbnail' && g.status === 'running');
  return shown && key ? store.signedUrl(key) : null;
}

/** The spec's generation record: group C's answer and the `generation` of `nested` webhooks. */
export type GenerationRecord = Pick<
  GenerationView,
  'id' | 'kind' | 'model' | 'status' | 'outputUrl' | 'creditsCharged' | 'error'
> & {
  /** Chat only: the reply. */
  text?: string;
  /** Only when one was named: the platform's own end user it was made for. */
  customer?: string;
  /** A succeeded chat only: its tokens in detail. */
  usage?: TokenUsage;
};

export function recordOf(g: GenerationView): GenerationRecord {
  return {
    id: g.id,
    kind: g.kind,
    model: g.model,
    status: g.status,
    outputUrl: g.outputUrl,
    creditsCharged: g.creditsCharged,
    error: g.error,
    ...(g.kind === 'chat' && g.text !== null ? { text: g.text } : {}),
    ...(g.customer !== null ? { customer: g.customer } : {}),
    ...(g.usage !== null ? { usage: g.usage } : {}),
  };
}
