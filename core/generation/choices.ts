import { failureMessage } from '../vocabulary';
import type { GenerationFailure } from '../vocabulary';

/**
 * The choices of one reply (OpenAI's `n`) are one answer: the client gets all of them or an error,
 * and pays for all or none (docs/decisions/0142-chat-choices-all-or-none.md). No choice is charged
 * before every one has succeeded; once one has failed, that first failure stands and every other
 * choice ends released with `choice_failed`, whatever it produced. A reply the API runs
 * (service/chat/choices.ts) and a batch line whose choices run as workflows of their own
 * (core/ledger/line-choices.ts) end their choices by this one rule.
 *
 * `firstFailure` is the first failure among the reply's choices when it is another choice's:
 * undefined while none has failed, or when `own` is that first failure.
 */
export function choiceOutcome<R extends { ok: boolean }>(
  own: R,
  firstFailure: GenerationFailure | undefined,
): R | { ok: false; error: GenerationFailure } {
  if (!firstFailure) return own;
  return {
    ok: false,
    error: { code: 'choice_failed', message: failureMessage('choice_failed'), retryable: firstFailure.retryable },
  };
}
