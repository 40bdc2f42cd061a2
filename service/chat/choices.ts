import { choiceOutcome } from '../../core/generation/choices';
import type { ApiRunResult } from '../../core/workflow-contract';
import type { ChatRunEvent } from './reply-stream';

/** One event of one of several choices (OpenAI's `n`), with that choice's index. */
export interface ChoiceEvent {
  index: number;
  event: ChatRunEvent;
}

/**
 * The events of several runs as they come, each with its choice's index, until every run has
 * ended. `firsts` are the events each run has already given. Stopping early, or a run failing,
 * stops them all (each is then charged what it handed out, as a client that went away is).
 */
export async function* interleaved(
  firsts: readonly IteratorResult<ChatRunEvent>[],
  rests: readonly AsyncIterator<ChatRunEvent>[],
): AsyncGenerator<ChoiceEvent> {
  type Next = { index: number; result: IteratorResult<ChatRunEvent> };
  const pending = new Map<number, Promise<Next>>();
  const take = (index: number, next: Promise<IteratorResult<ChatRunEvent>>): void => {
    const read = next.then((result) => ({ index, result }));
    // A read still pending when the caller stops is never raced again: its failure must not go unhandled.
    read.catch(() => undefined);
    pending.set(index, read);
  };
  firsts.forEach((first, index) => take(index, Promise.resolve(first)));
  try {
    while (pending.size > 0) {
      const { index, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(index);
        continue;
      }
      take(index, rests[index]!.next());
      yield { index, event: result.value };
    }
  } finally {
    await stopAll(rests);
  }
}

/**
 * The first event of each run, or, when any run fails before its first, that failure once every
 * run has stopped and settled (nothing reached the client: the others are stopped).
 */
export async function firstsOf(
  runs: readonly { settled(): Promise<void> }[],
  rests: readonly AsyncIterator<ChatRunEvent>[],
  read: <T>(work: () => Promise<T>) => Promise<T>,
): Promise<IteratorResult<ChatRunEvent>[]> {
  const firsts = await Promise.allSettled(rests.map((rest) => read(() => rest.next())));
  const failed = firsts.find((f) => f.status === 'rejected');
  if (!failed) return firsts.map((f) => (f as PromiseFulfilledResult<IteratorResult<ChatRunEvent>>).value);
  await stopAll(rests);
  // Answered once the holds are back, so that the balance read next shows nothing taken.
  await Promise.allSettled(runs.map((run) => run.settled()));
  throw failed.reason;
}

/** Ends every run (a run already ended is left as it is). */
async function stopAll(rests: readonly AsyncIterator<ChatRunEvent>[]): Promise<void> {
  await Promise.allSettled(rests.map((rest) => Promise.resolve(rest.return?.())));
}

/** How the choices of one reply end, decided once all have ended. */
export interface ChoiceGroup {
  /** Aborted by the first choice that fails: the others stop as if their client had gone. */
  signal: AbortSignal;
  /** Choice `index`'s finish, held back until every choice has reported. */
  finishOf(index: number, finish: (result: ApiRunResult) => void): (result: ApiRunResult) => void;
  /** The client has begun to receive the choices (a stream): from here each is charged what reached it. */
  answered(): void;
}

/**
 * The choices of one reply (OpenAI's `n`) are one answer: the client gets all of them or an
 * error. So no choice is settled before every one has ended; should any fail before the answer
 * has begun to reach the client (a whole reply, or a stream before its first chunk), the first
 * failure stands and every other choice is released with `choice_failed`, whatever it produced:
 * nothing is charged for an answer the client never receives. Once a stream has begun, each
 * choice keeps its own outcome (the others stop with a failure, charged what reached the client).
 */
export function choiceGroup(count: number): ChoiceGroup {
  const stop = new AbortController();
  const results: ApiRunResult[] = [];
  const finishes: ((result: ApiRunResult) => void)[] = [];
  let firstFailure: Extract<ApiRunResult, { ok: false }> | undefined;
  let answered = false;
  let reported = 0;
  const outcomeOf = (r: ApiRunResult): ApiRunResult =>
    choiceOutcome(r, firstFailure && !answered && r !== firstFailure ? firstFailure.error : undefined);
  return {
    signal: stop.signal,
    finishOf: (index, finish) => {
      finishes[index] = finish;
      return (result) => {
        results[index] = result;
        if (!result.ok && !firstFailure) {
          firstFailure = result;
          stop.abort(new Error('another choice of the reply failed'));
        }
        if (++reported === count) results.forEach((r, i) => finishes[i]!(outcomeOf(r)));
      };
    },
    answered: () => {
      if (!firstFailure) answered = true;
    },
  };
}
