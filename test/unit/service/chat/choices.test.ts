/**
 * The choices of one reply are answered, and so charged, all or none until the answer has begun
 * to reach the client; afterwards each keeps its own outcome.
 */
import { describe, expect, it } from 'vitest';
import { choiceGroup } from '../../../../service/chat/choices';
import type { ApiRunResult } from '../../../../core/workflow-contract';

const ok = (tokens: number): ApiRunResult => ({
  ok: true,
  output: { outputKey: null, outputText: 'x', chargeMc: tokens * 10, outputTokens: tokens },
});
const failed: ApiRunResult = {
  ok: false,
  error: { code: 'provider_error', message: 'The model provider failed.', retryable: true },
};

/** A group of `count` choices and what each was finished with. */
function group(count: number) {
  const g = choiceGroup(count);
  const finished: (ApiRunResult | undefined)[] = Array.from({ length: count }, () => undefined);
  const finishes = finished.map((_, i) => g.finishOf(i, (r) => (finished[i] = r)));
  return { g, finished, finishes };
}

describe('choiceGroup', () => {
  it('settles nothing before every choice has ended, then each as it came when all succeeded', () => {
    const { g, finished, finishes } = group(2);
    finishes[1]!(ok(3));
    expect(finished).toEqual([undefined, undefined]);
    expect(g.signal.aborted).toBe(false);
    finishes[0]!(ok(5));
    expect(finished).toEqual([ok(5), ok(3)]);
  });

  it('releases every other choice when one fails before the answer began, and stops those still running', () => {
    const { g, finished, finishes } = group(3);
    finishes[0]!(ok(4));
    finishes[1]!(failed);
    expect(g.signal.aborted).toBe(true);
    finishes[2]!(ok(1));
    expect(finished[1]).toEqual(failed);
    for (const i of [0, 2])
      expect(finished[i]).toMatchObject({ ok: false, error: { code: 'choice_failed', retryable: true } });
  });

  it('keeps each outcome once the answer has begun to reach the client', () => {
    const { g, finished, finishes } = group(2);
    g.answered();
    finishes[0]!(ok(2));
    finishes[1]!(failed);
    expect(finished).toEqual([ok(2), failed]);
  });

  it('a failure before the answer began is not undone by the door answering afterwards', () => {
    const { g, finished, finishes } = group(2);
    finishes[0]!(failed);
    g.answered();
    finishes[1]!(ok(2));
    expect(finished[1]).toMatchObject({ ok: false, error: { code: 'choice_failed' } });
  });
});
