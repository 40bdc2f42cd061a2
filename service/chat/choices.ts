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
