import type { Kind } from '../catalogue';

/** One job handed to a provider: the model and the parameters the quote was made with. */
export interface ProviderJob {
  generationId: string;
  kind: Kind;
  model: string;
  prompt: string;
  params: Record<string, unknown>;
  /** The input file of a job that transforms one (upscale), read from the store by the activity. */
  input?: Buffer;
}

export interface ProviderFile {
  data: Buffer;
  contentType: string;
  extension: string;
}

export interface ProviderResult {
  file?: ProviderFile;
  text?: string;
  /** For use-billed runs (per output token). */
  outputTokens?: number;
}

/** What a long provider call may use: report liveness, and notice that the job was cancelled. */
export interface ProviderContext {
  heartbeat(): void;
  signal: AbortSignal;
}

export interface Provider {
  run(job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult>;
}
