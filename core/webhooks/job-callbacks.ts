import { InvalidRequestError } from '../errors';
import { BATCH_EVENTS, FLAT_EVENTS, PROGRESS_EVENT } from './events';

/**
 * A job's callback: a URL named on the submit itself, which gets that job's events (the `flat`
 * format's shape, signed with the account's callback secret). Doors name the URL and its event filter their
 * own way; the filter takes our event names, the statuses alone, and Replicate's words for them.
 */

/** What a job's callback is about: one generation, or one batch. */
export type CallbackJob = 'generation' | 'batch';

/** A callback as a door read it from its request, with its fields as the door spells them (for a 400 in its words). */
export interface RequestedCallback {
  url: string;
  events?: readonly string[] | undefined;
  /** The URL's field (`callback_url`, `webhook`, `callbackUrl`). */
  param: string;
  /** The event filter's field. */
  eventsParam: string;
}

/** A checked callback, as it is recorded with its job: where, and which events (null: all of its job's). */
export interface JobCallback {
  url: string;
  events: string[] | null;
}

/** What the callback of each job receives without a filter. */
export const CALLBACK_EVENTS: Record<CallbackJob, readonly string[]> = {
  generation: FLAT_EVENTS,
  batch: BATCH_EVENTS,
};

/** Short names a filter may use for generation events, Replicate's among them (`logs` has no event here). */
const GENERATION_ALIASES: Record<string, readonly string[]> = {
  queued: ['generation.queued'],
  running: ['generation.running'],
  start: ['generation.running'],
  succeeded: ['generation.succeeded'],
  failed: ['generation.failed'],
  completed: ['generation.succeeded', 'generation.failed'],
  progress: [PROGRESS_EVENT],
  output: [PROGRESS_EVENT],
  logs: [],
};

const BATCH_ALIASES: Record<string, readonly string[]> = Object.fromEntries(
  BATCH_EVENTS.map((e) => [e.slice('batch.'.length), [e]]),
);

/** The event names a filter of `job`'s callback may use: its job's events, and for a generation the opt-in progress. */
const eventsOf = (job: CallbackJob): readonly string[] =>
  job === 'generation' ? [...CALLBACK_EVENTS.generation, PROGRESS_EVENT] : CALLBACK_EVENTS.batch;
const aliasesOf = (job: CallbackJob): Record<string, readonly string[]> =>
  job === 'generation' ? GENERATION_ALIASES : BATCH_ALIASES;

/** Everything a filter of `job`'s callback may name. */
export const callbackFilterWords = (job: CallbackJob): string[] => [...eventsOf(job), ...Object.keys(aliasesOf(job))];

/**
 * The stored filter of a callback: null without one (every event of its job), else the
 * event names its words stand for. An unknown word is a 400 naming `param`.
 */
export function callbackEventFilter(
  words: readonly string[] | undefined,
  job: CallbackJob,
  param: string,
): string[] | null {
  if (words === undefined) return null;
  const known = eventsOf(job);
  const aliases = aliasesOf(job);
  const meaning = (w: string): readonly string[] | undefined =>
    known.includes(w) ? [w] : Object.hasOwn(aliases, w) ? aliases[w] : undefined;
  const unknown = words.filter((w) => meaning(w) === undefined);
  if (unknown.length > 0) {
    throw new InvalidRequestError(
      `${param}: ${unknown.map((w) => `'${w}'`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not an event of this job; use ${callbackFilterWords(job).join(', ')}.`,
      param,
    );
  }
  return [...new Set(words.flatMap((w) => meaning(w) ?? []))];
}
