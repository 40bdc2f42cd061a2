/** How much each scenario does; `--quick` checks that the bench works, the full run gives the numbers. */
export interface Sizes {
  baseline: { n: number; warmup: number };
  imageSequential: { n: number; warmup: number };
  imageConcurrent: { total: number; levels: number[] };
  videoSequential: { n: number; warmup: number };
  videoSpread: { total: number; accounts: number; concurrency: number; warmup: number };
  videoFifo: { total: number; concurrency: number };
  chatSequential: { n: number; warmup: number };
  refusal: { n: number; warmup: number };
  /** Streamed chat against the upstream directly: sequential pairs, then `total` at `concurrency`. */
  stream: { n: number; total: number; concurrency: number; tokens: number };
  /** Videos held in flight at once, for memory (service and reference). */
  inflight: { total: number; accounts: number; concurrency: number };
  /** Workflows per kind whose Temporal history is read for the profile. */
  profile: number;
}

export const FULL: Sizes = {
  baseline: { n: 200, warmup: 20 },
  imageSequential: { n: 100, warmup: 10 },
  imageConcurrent: { total: 200, levels: [20, 50] },
  videoSequential: { n: 50, warmup: 5 },
  videoSpread: { total: 200, accounts: 40, concurrency: 32, warmup: 5 },
  videoFifo: { total: 50, concurrency: 20 },
  chatSequential: { n: 50, warmup: 10 },
  refusal: { n: 100, warmup: 10 },
  stream: { n: 200, total: 320, concurrency: 32, tokens: 32 },
  inflight: { total: 1000, accounts: 200, concurrency: 32 },
  profile: 20,
};

export const QUICK: Sizes = {
  baseline: { n: 50, warmup: 10 },
  imageSequential: { n: 20, warmup: 5 },
  imageConcurrent: { total: 60, levels: [20, 50] },
  videoSequential: { n: 15, warmup: 3 },
  videoSpread: { total: 40, accounts: 8, concurrency: 32, warmup: 3 },
  videoFifo: { total: 15, concurrency: 15 },
  chatSequential: { n: 20, warmup: 5 },
  refusal: { n: 20, warmup: 5 },
  stream: { n: 50, total: 96, concurrency: 32, tokens: 32 },
  inflight: { total: 200, accounts: 40, concurrency: 32 },
  profile: 10,
};
