import type { Millicredits } from '../money';
import type { GenerationKind, RouteEntry, TokenUsage, ToolCall } from '../vocabulary';

/** What a settle or release asks of the ledger and what it answers (core/ledger/resolve.ts). */

export interface SettleRequest {
  generationId: string;
  /** What the run actually cost; omitted means the quote. Never more than the hold. */
  chargeMc?: Millicredits | undefined;
  outputKey: string | null;
  outputText: string | null;
  /** Per-token runs: the output tokens charged for, kept with the generation's (public) parameters. */
  outputTokens?: number | undefined;
  /** A chat's tokens in detail (cache, reasoning), kept beside the output tokens. */
  usage?: TokenUsage | undefined;
  /** A chat's function calls, kept with its internal parameters (a response continued later reads them). */
  toolCalls?: ToolCall[] | undefined;
  /** The router's entries of the run: which upstreams it asked, which one served at what cost. */
  routes?: RouteEntry[] | undefined;
}

export type Resolution =
  | { outcome: 'settled'; kind: GenerationKind; chargedMc: Millicredits; releasedMc: Millicredits; batchId?: string }
  | {
      outcome: 'released';
      kind: GenerationKind;
      releasedMc: Millicredits;
      code: string;
      batchId?: string;
      /** The other choices of its batch line still running, for the caller to stop: the line is charged nothing. */
      stopChoices?: string[];
    }
  /** A chat choice of a batch line that succeeded before the others of its line: its hold stays held (core/ledger/line-choices.ts). */
  | { outcome: 'waiting'; kind: GenerationKind }
  /** The hold had moved before: nothing changed now (`code`: the failure it was released with). */
  | { outcome: 'already'; state: 'settled' | 'released'; code?: string };
