import sharp from 'sharp';
import { ProviderRejectedError } from '../errors';
import { editImage } from '../media/edit';
import { renderImagePng } from '../media/png';
import { renderFirstFrameWebp, renderVideoWebm } from '../media/webm';
import { ImageInputError } from '../media/image-errors';
import { MediaRequestError } from '../media/png';
import { editVideoWebm, extendVideoWebm } from '../media/video-derivations';
import { upscale } from '../media/upscale';
import { parseDirectives } from './directives';
import type { SimDirectives } from './directives';
import type { PublicParams } from '../generation/params';
import { simulatedReply } from './simulated-chat';
import { simulatedLogprob } from './simulated-logprobs';
import { toolCallAssembler } from './tool-calls';
import { estimatedInputTokens } from './token-usage';
import type {
  ChatStreamEvent,
  Provider,
  ProviderContext,
  ProviderFile,
  ProviderJob,
  ProviderResult,
  ProviderUsage,
} from './types';

export interface SimulatorOptions {
  /** Overrides the per-kind default latency when a prompt gives no `sim:delay`. */
  latencyMs?: number;
  /** The pause between two tokens of a streamed chat when a prompt gives no `sim:pace` (default 20 ms). */
  paceMs?: number;
}

const DEFAULT_LATENCY_MS = { image: 200, chat: 100, video: 1500, upscale: 300 } as const;
/** A streamed reply arrives as a hosted model's does, about 50 tokens a second, unless `sim:pace` says otherwise. */
const DEFAULT_PACE_MS = 20;
/** A run reports its progress in this many steps, as a diffusion model counts its denoising steps. */
const PROGRESS_STEPS = 20;
const DEFAULT_CHAT_TOKENS = 24;
const HEARTBEAT_EVERY_MS = 1000;
/** `sim:until` never holds a run longer than `sim:delay` could. */
const MAX_UNTIL_MS = 60 * 60 * 1000;

/** The embedded default provider: real files, steerable by directives in the prompt. */
export function createSimulator(options: SimulatorOptions = {}): Provider {
  // Every render is new: libvips' operation cache (up to 50 MB of pixels) would only hold memory.
  sharp.cache(false);
  return {
    streamChat: (job, signal) => streamChat(job, signal, options),
    // Function tools and structured output, deterministically (simulated-chat.ts).
    serves: () => true,
    async run(job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
      const directives = parseDirectives(job.prompt);
      const delayMs =
        directives.untilEpochMs === undefined
          ? undefined
          : Math.min(Math.max(0, directives.untilEpochMs - Date.now()), MAX_UNTIL_MS);
      const seed = `${job.model}|${job.prompt}|${job.generationId}`;
      // A video's first frame is there before the rest, as a hosted model shows its first frame early.
      if (job.kind === 'video' && ctx.preview && !job.sourceVideo) {
        const { width, height } = dimensions(job.params, 320, 180);
        ctx.preview({
          data: await renderFirstFrameWebp({ width, height, seconds: videoSeconds(job.params), seed }),
          contentType: 'image/webp',
          extension: 'webp',
        });
      }
      await wait(delayMs ?? directives.delayMs ?? options.latencyMs ?? DEFAULT_LATENCY_MS[job.kind], ctx);
      if (directives.fail)
        throw new ProviderRejectedError('The simulated provider failed this run (sim:fail).', 'provider_failed');
      switch (job.kind) {
        case 'image': {
          if (job.inputs?.[0]) {
            const { width, height } = job.params;
            const size = width !== undefined && height !== undefined ? { width, height } : undefined;
            const data = await editImage({ image: job.inputs[0], mask: job.mask, seed, size });
            return { file: { data, contentType: 'image/png', extension: 'png' } };
          }
          const { width, height } = dimensions(job.params, 1024, 1024);
          return {
            file: { data: await renderImagePng({ width, height, seed }), contentType: 'image/png', extension: 'png' },
          };
        }
        case 'video': {
          if (job.sourceVideo) return { file: await derivedVideo(job, job.sourceVideo, seed) };
          const { width, height } = dimensions(job.params, 320, 180);
          return {
            file: {
              data: await renderVideoWebm({ width, height, seconds: videoSeconds(job.params), seed }),
              contentType: 'video/webm',
              extension: 'webm',
            },
          };
        }
        case 'chat': {
          const events = chatReply(job, directives);
          let text = '';
          const calls = toolCallAssembler();
          for (const e of events) {
            if (e.type === 'delta') text += e.text;
            else calls.add(e);
          }
          const toolCalls = calls.calls();
          const usage = simulatedUsage(job, directives, events.length);
          return {
            text,
            outputTokens: usage.outputTokens,
            usage,
            ...(toolCalls.length > 0 ? { toolCalls } : {}),
            file: { data: Buffer.from(text, 'utf8'), contentType: 'text/plain; charset=utf-8', extension: 'txt' },
          };
        }
        case 'upscale': {
          if (!job.input) throw new ProviderRejectedError('The upscale job has no input image.', 'input_missing');
          const scale = job.params.scale === 4 ? 4 : 2;
          try {
            const out = await upscale(job.input, scale);
            return { file: { data: out.data, contentType: 'image/png', extension: 'png' } };
          } catch (err) {
            // The input was checked at submit; one that still fails will fail on every attempt.
            if (err instanceof ImageInputError) throw new ProviderRejectedError(err.message, 'invalid_input');
            throw err;
          }
        }
      }
    },
  };
}

/**
 * The same reply as `run` gives, token by token: `sim:delay` before the first token, `sim:pace`
 * between tokens (20 ms by default; `sim:pace=0` sends the reply in one burst), then the count as
 * the provider's usage.
 */
async function* streamChat(
  job: ProviderJob,
  signal: AbortSignal,
  options: SimulatorOptions,
): AsyncGenerator<ChatStreamEvent> {
  const directives = parseDirectives(job.prompt);
  await pause(directives.delayMs ?? options.latencyMs ?? DEFAULT_LATENCY_MS.chat, signal);
  if (directives.fail)
    throw new ProviderRejectedError('The simulated provider failed this run (sim:fail).', 'provider_failed');
  const events = chatReply(job, directives);
  const paceMs = directives.paceMs ?? options.paceMs ?? DEFAULT_PACE_MS;
  for (const [i, event] of events.entries()) {
    if (i > 0 && paceMs > 0) await pause(paceMs, signal);
    signal.throwIfAborted();
    yield event;
  }
  yield { type: 'usage', ...simulatedUsage(job, directives, events.length) };
}

/** The reasoning a reply reports (`sim:reasoning`): output tokens too, so within the reply's cap. */
const reasoningOf = (job: ProviderJob, directives: SimDirectives): number =>
  Math.min(directives.reasoningTokens ?? 0, job.params.maxTokens ?? Infinity);

/**
 * The usage a hosted model would report for the reply's `pieces`: its output counts the
 * reasoning, its input the prompt (about four characters a token) and the cache read and written.
 */
function simulatedUsage(job: ProviderJob, directives: SimDirectives, pieces: number): ProviderUsage {
  const reasoningTokens = reasoningOf(job, directives);
  const cachedInputTokens = directives.cachedTokens ?? 0;
  const cacheWriteTokens = directives.cacheWriteTokens ?? 0;
  return {
    outputTokens: pieces + reasoningTokens,
    inputTokens: estimatedInputTokens(job.prompt) + cachedInputTokens + cacheWriteTokens,
    cachedInputTokens,
    cacheWriteTokens,
    reasoningTokens,
  };
}

/**
 * The reply's pieces, one token each: words, JSON, or a function call (simulated-chat.ts);
 * reasoning takes its share of the cap first. Asked for, each text piece has its log probability.
 */
function chatReply(job: ProviderJob, directives: SimDirectives) {
  const cap = (job.params.maxTokens ?? Infinity) - reasoningOf(job, directives);
  const tools = job.internal.tools;
  const sampling = job.internal.sampling;
  const events = simulatedReply({
    model: job.model,
    prompt: job.prompt,
    messages: job.internal.messages ?? [{ role: 'user', content: job.prompt }],
    functions: tools?.functions ?? [],
    choice: tools?.choice,
    responseFormat: job.internal.responseFormat,
    maxTokens: cap,
    text: chatWords(job.prompt, Math.min(directives.tokens ?? DEFAULT_CHAT_TOKENS, cap)),
  });
  if (!sampling?.logprobs) return events;
  return events.map((e, i) =>
    e.type === 'delta'
      ? { ...e, logprobs: [simulatedLogprob(e.text, `${job.prompt}|${i}`, sampling.top_logprobs ?? 0)] }
      : e,
  );
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const videoSeconds = (params: PublicParams): number => params.seconds ?? 5;

/** A video made from a source (core/media/video-derivations.ts): its continuation by `seconds`, or its edited copy. */
async function derivedVideo(job: ProviderJob, source: Buffer, seed: string): Promise<ProviderFile> {
  try {
    const data =
      job.params.extendedFrom !== undefined
        ? await extendVideoWebm({ source, seconds: videoSeconds(job.params), seed })
        : await editVideoWebm({ source, seed });
    return { data, contentType: 'video/webm', extension: 'webm' };
  } catch (err) {
    // A source that gives no frames gives none on any attempt.
    if (err instanceof MediaRequestError) throw new ProviderRejectedError(err.message, 'invalid_input');
    throw err;
  }
}

function dimensions(params: PublicParams, width: number, height: number): { width: number; height: number } {
  return { width: params.width ?? width, height: params.height ?? height };
}

/**
 * Sleeps in small steps so the job keeps heartbeating and stops promptly when cancelled, and
 * reports its progress in PROGRESS_STEPS steps as it goes (100 once the wait is over; the file is
 * made after).
 */
async function wait(ms: number, ctx: ProviderContext): Promise<void> {
  const start = Date.now();
  const end = start + ms;
  // Short runs still report several steps; long ones at most once a heartbeat.
  const beatMs = Math.max(50, Math.min(HEARTBEAT_EVERY_MS, Math.ceil(ms / 10)));
  ctx.progress?.(0);
  for (;;) {
    ctx.signal.throwIfAborted();
    const left = end - Date.now();
    if (left <= 0) {
      ctx.progress?.(100);
      return;
    }
    // One listener per beat, removed when the beat ends: a long run must not pile them up.
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        ctx.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(left, beatMs));
      ctx.signal.addEventListener('abort', done, { once: true });
    });
    ctx.heartbeat();
    const step = Math.floor(Math.min(1, (Date.now() - start) / Math.max(1, ms)) * PROGRESS_STEPS);
    ctx.progress?.(Math.round((step / PROGRESS_STEPS) * 100));
  }
}

const WORDS = [
  'the',
  'light',
  'over',
  'quiet',
  'water',
  'moves',
  'slowly',
  'through',
  'a',
  'field',
  'of',
  'tall',
  'grass',
  'while',
  'birds',
  'answer',
  'each',
  'other',
  'in',
  'warm',
  'evening',
  'air',
  'and',
  'rest',
];

/**
 * A deterministic reply of exactly `tokens` words, one word standing for one output token, as the
 * pieces a stream sends (each after the first with its leading space, the last with the full
 * stop): joined, they are the whole reply.
 */
function chatWords(prompt: string, tokens: number): string[] {
  let h = 2166136261;
  for (let i = 0; i < prompt.length; i++) h = Math.imul(h ^ prompt.charCodeAt(i), 16777619) >>> 0;
  const words: string[] = [];
  for (let i = 0; i < tokens; i++) {
    h = Math.imul(h ^ i, 2654435761) >>> 0;
    const word = WORDS[h % WORDS.length]!;
    words.push(i === 0 ? `${word.charAt(0).toUpperCase()}${word.slice(1)}` : ` ${word}`);
  }
  if (words.length > 0) words[words.length - 1] += '.';
  return words;
}
