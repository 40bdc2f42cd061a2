import type { BatchProblem } from '../../core/db/batches';
import type { ChatSampling, ChatTools, ResponseFormat, ResponseRecord } from '../../core/generation/params';
import type { GenerationView } from '../../core/generation/view';
import type { BatchEndpoint, BatchFormat, BatchStatus, GenerationKind, ToolCall } from '../../core/vocabulary';
import type { GenerationRequest } from '../generation/requests';

/** What the batch service takes and gives: shared by its parts and by the doors that call it. */

/** A batch as every door may show it; each door names the fields its way. */
export interface BatchView {
  id: string;
  /** OpenAI's Batch API or Anthropic's Message Batches: how it was made, and how its results read. */
  format: BatchFormat;
  endpoint: BatchEndpoint;
  kind: GenerationKind;
  /** Null for a batch whose requests came inline (Anthropic's). */
  inputFileId: string | null;
  completionWindow: string;
  status: BatchStatus;
  /** Why it failed at validation (line numbers start at 1); null otherwise. */
  errors: BatchProblem[] | null;
  outputFileId: string | null;
  errorFileId: string | null;
  metadata: Record<string, string> | null;
  requestCounts: { total: number; completed: number; failed: number };
  /** Of the failed: those its stop (a cancel, or the end of its window) kept from running or cut short. */
  stopped: { cancelled: number; expired: number };
  /** Lines started and not ended, and lines not started yet. */
  running: number;
  waiting: number;
  /** What the batch held when it was created (every line at the batch rate). */
  creditsHeld: number;
  /** What its lines have been charged so far. */
  creditsCharged: number;
  createdAt: Date;
  inProgressAt: Date | null;
  expiresAt: Date | null;
  finalizingAt: Date | null;
  completedAt: Date | null;
  failedAt: Date | null;
  expiredAt: Date | null;
  cancellingAt: Date | null;
  cancelledAt: Date | null;
}

/** A line's body read by the door that speaks its endpoint: what to run, how many, and what to answer with. */
export interface ParsedLine {
  request: GenerationRequest;
  /** Generations the line makes (group B's `n` images); 1 otherwise. */
  count?: number;
  /** The line's own `max_credits`: its price (at the batch rate) above it makes the batch fail validation. */
  spendCap?: number | undefined;
  /** What the door needs besides the records to answer the line as its endpoint would (e.g. `b64_json`). */
  answer?: LineAnswerHints;
}

export interface LineAnswerHints {
  /** Images: `b64_json` answers the files themselves. */
  responseFormat?: 'url' | 'b64_json';
}

/** Reads one line's body for the batch's endpoint; throws the DomainError that endpoint would answer. */
export type LineParser = (body: Record<string, unknown>) => Promise<ParsedLine>;

/** A generation a line became, with what the Responses and chat answers show besides the record. */
export interface LineGenerationView extends GenerationView {
  /** The functions the reply called. */
  toolCalls: ToolCall[];
  /** A Responses API line: what it keeps beside the reply. */
  record: ResponseRecord;
  sampling: ChatSampling;
  tools: ChatTools | undefined;
  /** Structured output, when the line asked for it. */
  responseFormat: ResponseFormat | undefined;
}

/** A line of a batch as its output or error file shows it. */
export interface LineResult {
  line: number;
  customId: string;
  /** `completed`: one of its generations succeeded; `failed`: none did, or it never ran. */
  state: 'completed' | 'failed';
  /** It never ran, or was stopped in flight, because its batch was cancelled or expired. */
  stopped: 'cancelled' | 'expired' | null;
  answer: LineAnswerHints;
  generations: LineGenerationView[];
}
