/**
 * The provider runs one worker process may have under way at once (PROVIDER_CONCURRENCY), wherever
 * they run: taken from the provider task queue (the provider worker's slots are these permits) or
 * in place, as a local activity of the workflow that asked (activities/generation/provider.ts). A run
 * in place takes a permit only if one is free at once; otherwise it goes to the queue, where
 * Temporal's fairness orders the waiting.
 *
 * A few permits are kept back from the queue: only a run in place of an account that has none in
 * place here may take them. However busy another account keeps the rest, an account arriving alone
 * finds one free at once instead of waiting for the next to end (decision 0143).
 */
export class ProviderRunPermits {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  /** Runs under way here, in place or from the queue, by account. */
  readonly #running = new Map<string, number>();
  /** Kept back from the queue for accounts with nothing in place. */
  readonly reserved: number;

  constructor(readonly size: number) {
    this.#free = size;
    this.reserved = size >= 4 ? Math.max(1, Math.floor(size / 10)) : 0;
  }

  /** A permit now for the queue, or false: never waits. */
  tryTake(): boolean {
    if (this.#free <= this.reserved) return false;
    this.#free -= 1;
    return true;
  }

  /** A permit for the queue when one is free; rejects with the signal's reason if it aborts first. */
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

  /** A permit now for a run in place of this account, or false: the kept-back ones only if it has none under way. */
  tryTakeInPlace(accountId: string): boolean {
    if (!this.tryTake()) {
      if (this.#free === 0 || this.#running.has(accountId)) return false;
      this.#free -= 1;
    }
    this.#count(accountId, 1);
    return true;
  }

  giveInPlace(accountId: string): void {
    this.#count(accountId, -1);
    this.give();
  }

  /** A run from the queue under way for this account (its permit is the poll's): until the answer is called. */
  running(accountId: string): () => void {
    this.#count(accountId, 1);
    return () => this.#count(accountId, -1);
  }

  #count(accountId: string, by: 1 | -1): void {
    const n = (this.#running.get(accountId) ?? 0) + by;
    if (n > 0) this.#running.set(accountId, n);
    else this.#running.delete(accountId);
  }

  give(): void {
    this.#free = Math.min(this.size, this.#free + 1);
    while (this.#waiting.length > 0 && this.#free > this.reserved) {
      this.#free -= 1;
      this.#waiting.shift()!();
    }
  }

  get free(): number {
    return this.#free;
  }
}
