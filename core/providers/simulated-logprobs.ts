import { seededRandom } from './schema-sample';
import { MAX_TOP_LOGPROBS } from './types';
import type { TokenLogprob } from './types';

/** Tokens the simulator offers as the likeliest others at a place. */
const ALTERNATIVES = [' the', ' a', ' and', ' of', ' light', ' water', ' air', ' slowly', '.', ',', ' in', ' over'];

/**
 * A simulated reply piece's log probability, deterministic for its seed: the piece is the likeliest
 * token at its place (a log probability in [-0.51, -0.01]), and the `top` likeliest are it, then
 * others each less likely than the last, their probabilities summing to less than one.
 */
export function simulatedLogprob(piece: string, seed: string, top: number): TokenLogprob {
  const logprob = -(0.01 + seededRandom(seed)() * 0.5);
  // The others share what the piece leaves, halving down the list: their sum stays below it.
  const left = 1 - Math.exp(logprob);
  const others = ALTERNATIVES.filter((t) => t !== piece);
  const count = Math.min(top, MAX_TOP_LOGPROBS);
  const entry = (token: string, lp: number) => ({ token, logprob: lp, bytes: bytesOf(token) });
  const rest = Array.from({ length: Math.max(0, count - 1) }, (_, i) =>
    entry(others[i] ?? ` word${i}`, Math.log(left / 2 ** (i + 1))),
  );
  return { token: piece, logprob, bytes: bytesOf(piece), top: count > 0 ? [entry(piece, logprob), ...rest] : [] };
}

const bytesOf = (token: string): number[] => [...Buffer.from(token, 'utf8')];
