/**
 * sharp runs off the event loop, on libuv's thread pool (4 threads by default). That pool also
 * serves dns.lookup, file reads and crypto, in arrival order: a burst of upscales queued there
 * would stall every webhook delivery's DNS lookup behind them. At most this many image jobs
 * hold pool threads at once; the rest wait here, where they cost nothing.
 */
export const MAX_CONCURRENT_IMAGE_JOBS = 2;

let running = 0;
const waiting: (() => void)[] = [];

/** Not re-entrant: `work` must not wait for a slot itself, or a full house would deadlock. */
export async function withImageSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running < MAX_CONCURRENT_IMAGE_JOBS) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await work();
  } finally {
    // Hand the slot straight to the next job, so a newcomer cannot overtake the queue.
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}
