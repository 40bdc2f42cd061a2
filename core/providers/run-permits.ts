/**
 * The provider runs one worker process may have under way at once (PROVIDER_CONCURRENCY), wherever
 * they run: taken from the provider task queue (the provider worker's slots are these permits) or
 * in place, as a local activity of the workflow that asked (activities/generation/provider.ts). A run
 * in place takes a permit only if one is free at once; otherwise it goes to the queue, where
 * Temporal's fairness orders the waiting.
 */
export class ProviderRunPermits {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.#free = size;
  }

  /** A permit now, or false: never waits. */
  tryTake(): boolean {
    if (this.#free === 0) return false;
    this.#free -= 1;
    return true;
  }

  /** A permit when one is free; rejects with the signal's reason if it aborts first. */
  take(signal: AbortSignal): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const granted = () => {
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        const at = this.#waiting.indexOf(granted);
        if (at !== -1) this.#waiting.splice(at, 1);
        // The SDK takes an AbortError as a reservation it no longer needs.
        const reason: unknown = signal.reason;
        reject(reason instanceof Error ? reason : new DOMException('The reservation was aborted.', 'AbortError'));
      };
      signal.addEventListener('abort', aborted, { once: true });
      this.#waiting.push(granted);
    });
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free = Math.min(this.size, this.#free + 1);
  }

  get free(): number {
    return this.#free;
  }
}
