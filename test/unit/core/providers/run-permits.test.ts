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

  it('keeps a tenth back from the queue for a run in place of an account with none in place', () => {
    const permits = new ProviderRunPermits(10);
    expect(permits.reserved).toBe(1);
    for (let i = 0; i < 9; i += 1) expect(permits.tryTake()).toBe(true);
    expect(permits.tryTake()).toBe(false);
    // The flood's account, already running in place here, cannot take the kept-back permit; a lone one can.
    const busy = new ProviderRunPermits(10);
    for (let i = 0; i < 8; i += 1) expect(busy.tryTake()).toBe(true);
    expect(busy.tryTakeInPlace('acct_flood')).toBe(true);
    expect(busy.tryTakeInPlace('acct_flood')).toBe(false);
    expect(busy.tryTakeInPlace('acct_lone')).toBe(true);
    expect(busy.free).toBe(0);
    busy.giveInPlace('acct_lone');
    expect(busy.tryTake()).toBe(false);
    expect(busy.tryTakeInPlace('acct_other')).toBe(true);
  });

  it('keeps them from an account with a run from the queue under way here too', () => {
    const permits = new ProviderRunPermits(10);
    for (let i = 0; i < 9; i += 1) permits.tryTake();
    const done = permits.running('acct_flood');
    expect(permits.tryTakeInPlace('acct_flood')).toBe(false);
    done();
    expect(permits.tryTakeInPlace('acct_flood')).toBe(true);
  });

  it('wakes a waiting poll only when a permit beyond the kept-back ones frees', async () => {
    const permits = new ProviderRunPermits(10);
    for (let i = 0; i < 9; i += 1) permits.tryTake();
    expect(permits.tryTakeInPlace('acct_lone')).toBe(true);
    let woken = false;
    const waiting = permits.take(new AbortController().signal).then(() => (woken = true));
    permits.giveInPlace('acct_lone');
    await Promise.resolve();
    expect(woken).toBe(false);
    permits.give();
    await waiting;
    expect(woken).toBe(true);
  });
});
