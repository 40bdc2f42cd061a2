import { ContentPolicyError, InvalidRequestError, ProviderFailedError, ProviderRejectedError } from '../../core/errors';
import type { DomainError } from '../../core/errors';
import type { ChatStreamEvent, Provider, ProviderJob } from '../../core/providers/types';
import type { OutputStore } from '../../core/storage/output-store';
import { failureMessage } from '../../core/vocabulary';
import type { GenerationFailure, RouteEntry } from '../../core/vocabulary';

/** The provider side of a chat the API streams itself (service/generation/kinds/streamed-chat.ts). */

/** The reply as a file beside the other outputs; a store failure loses the file, not the charge. */
export async function storeText(store: OutputStore, generationId: string, text: string): Promise<string | null> {
  const key = `${generationId}/output.txt`;
  try {
    await store.put(key, Buffer.from(text, 'utf8'), 'text/plain; charset=utf-8');
    return key;
  } catch {
    return null;
  }
}

/** The record's failure: a code and our message (the provider's own text is logged by the caller). */
export function failureOf(err: unknown): GenerationFailure {
  if (err instanceof ProviderRejectedError)
    return { code: err.code, message: failureMessage(err.code), retryable: false };
  return { code: 'provider_error', message: failureMessage('provider_error'), retryable: true };
}

/** What the client is told when the provider fails; nothing was charged. Never the provider's own text. */
export function clientErrorOf(err: unknown): DomainError {
  if (err instanceof ProviderRejectedError) {
    if (err.code === 'content_policy') return new ContentPolicyError();
    if (err.code === 'invalid_request')
      return new InvalidRequestError('The model refused the request as invalid; nothing was charged.');
    return new ProviderFailedError(`The model provider refused the request (${err.code}); nothing was charged.`);
  }
  return new ProviderFailedError('The model provider failed; nothing was charged. Retry shortly.');
}

/**
 * Opens the provider's stream and asks for its first event at once (an async generator would not
 * start before its first `next()`), so that the upstream request is under way from here on.
 */
export function openStream(
  provider: Provider,
  job: ProviderJob,
  signal: AbortSignal,
  routed?: (entry: RouteEntry) => void,
): AsyncIterable<ChatStreamEvent> {
  const iterator = provider.streamChat(job, signal, routed)[Symbol.asyncIterator]();
  const first = iterator.next();
  // Not awaited until the run reads it: a failure meanwhile must not be an unhandled rejection.
  first.catch(() => undefined);
  let started = false;
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        if (started) return iterator.next();
        started = true;
        return first;
      },
      return: async () => (await iterator.return?.()) ?? { done: true, value: undefined },
    }),
  };
}
