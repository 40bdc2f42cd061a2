import { describe, expect, it } from 'vitest';
import { ProviderRunPermits } from '../../../../core/providers/run-permits';

describe('provider run permits', () => {
  it('hands out at most their number, never waiting for tryTake', () => {
    const permits = new ProviderRunPermits(2);
    expect([permits.tryTake(), permits.tryTake(), permits.tryTake()]).toEqual([true, true, false]);
    permits.give();
    expect(permits.tryTake()).toBe(true);
  });

  it('gives a freed permit to the first waiter, before anyone who only tries', async () => {
    const permits = new ProviderRunPermits(1);
    expect(permits.tryTake()).toBe(true);
    const order: string[] = [];
    const first = permits.take(new AbortController().signal).then(() => order.push('first'));
    const second = permits.take(new AbortController().signal).then(() => order.push('second'));
    permits.give();
    expect(permits.tryTake()).toBe(false);
    await first;
    permits.give();
    await second;
    expect(order).toEqual(['first', 'second']);
    permits.give();
    expect(permits.free).toBe(1);
  });

  it('drops a waiter whose signal aborts, and never counts more permits than it has', async () => {
    const permits = new ProviderRunPermits(1);
    permits.tryTake();
    const abort = new AbortController();
    const waiting = permits.take(abort.signal);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    permits.give();
    permits.give();
    expect(permits.free).toBe(1);
  });
});
