import { describe, expect, it } from 'vitest';
import { createAccountLanes } from '../../../../core/generation/account-lanes';

/** A piece of work that finishes when told to. */
function held() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { done, finish };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('account lanes', () => {
  it('lets a lone account through while another account fills its own lane', async () => {
    const lanes = createAccountLanes(2);
    const started: string[] = [];
    const flood = Array.from({ length: 10 }, () => held());
    const flooding = flood.map((w, i) =>
      lanes.through('acct_flood', async () => {
        started.push(`flood ${i}`);
        await w.done;
      }),
    );
    await settle();
    expect(started).toEqual(['flood 0', 'flood 1']);
    expect(lanes.occupancy('acct_flood')).toEqual({ inside: 2, waiting: 8 });

    // The other account does not wait for any of the eight queued behind the flood's lane.
    await lanes.through('acct_lone', async () => void started.push('lone'));
    expect(started).toEqual(['flood 0', 'flood 1', 'lone']);

    for (const w of flood) w.finish();
    await Promise.all(flooding);
    expect(started).toHaveLength(11);
    expect(lanes.occupancy('acct_flood')).toEqual({ inside: 0, waiting: 0 });
  });

  it('serves an account in arrival order and hands the place on when work fails', async () => {
    const lanes = createAccountLanes(1);
    const order: number[] = [];
    const first = held();
    const runs = [
      lanes.through('a', async () => {
        order.push(0);
        await first.done;
        throw new Error('refused');
      }),
      lanes.through('a', async () => void order.push(1)),
      lanes.through('a', async () => void order.push(2)),
    ];
    await settle();
    expect(order).toEqual([0]);
    first.finish();
    const results = await Promise.allSettled(runs);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(order).toEqual([0, 1, 2]);
    expect(lanes.occupancy('a')).toEqual({ inside: 0, waiting: 0 });
  });

  it('refuses a lane width that is not a positive integer', () => {
    expect(() => createAccountLanes(0)).toThrow(/positive integer/);
  });
});
