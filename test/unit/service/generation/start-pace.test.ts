import { describe, expect, it } from 'vitest';
import { createStartPace } from '../../../../service/generation/start-pace';
import type { LiveNotice } from '../../../../service/generation/live-events';

/** The ledger's status channel as the pace hears it, and a clock the test moves. */
function setUp(options: { room: number; minPerSecond?: number; maxDelayMs?: number }) {
  let hear: (notice: LiveNotice) => void = () => undefined;
  let listening!: () => void;
  const live = {
    subscribeAll: (listener: (notice: LiveNotice) => void) => {
      hear = listener;
      return new Promise<() => void>((resolve) => (listening = () => resolve(() => undefined)));
    },
  };
  let t = 1_000_000;
  const pace = createStartPace(live, { ...options, now: () => t });
  return {
    pace,
    hear: (notice: LiveNotice) => hear(notice),
    listening: async () => {
      hear({ resync: true });
      listening();
      await Promise.resolve();
      await Promise.resolve();
    },
    advance: (ms: number) => (t += ms),
    end: (accountId: string, generationId: string) => hear({ accountId, generationId, status: 'succeeded' }),
  };
}

describe('the start pace', () => {
  it('starts an account’s generations at once within its room, then one gap apart', async () => {
    const { pace, listening } = setUp({ room: 2, minPerSecond: 20 });
    await listening();
    expect(['a1', 'a2', 'a3', 'a4', 'a5'].map((id) => pace.delayFor('a', id))).toEqual([0, 0, 50, 100, 150]);
    // Another account has a room of its own.
    expect(pace.delayFor('b', 'b1')).toBe(0);
    expect(pace.inFlight('a')).toBe(5);
  });

  it('frees room as the account’s runs end, and paces as fast as they end', async () => {
    const { pace, listening, advance, end } = setUp({ room: 1, minPerSecond: 10 });
    await listening();
    expect(pace.delayFor('a', 'a1')).toBe(0);
    expect(pace.delayFor('a', 'a2')).toBe(100);
    advance(100);
    end('a', 'a1');
    expect(pace.delayFor('a', 'a3')).toBe(100);
    advance(10);
    end('a', 'a2');
    // Runs ending 10 ms apart: the next start comes 5 ms after the one before it (a3's, at 200).
    expect(pace.delayFor('a', 'a4')).toBe(95);
    expect(pace.delayFor('a', 'a5')).toBe(100);
  });

  it('forgets a start that failed, and an end it has not counted changes nothing', async () => {
    const { pace, listening, end } = setUp({ room: 1 });
    await listening();
    pace.delayFor('a', 'a1');
    pace.dropped('a', 'a1');
    end('a', 'elsewhere');
    expect(pace.inFlight('a')).toBe(0);
    expect(pace.delayFor('a', 'a2')).toBe(0);
  });

  it('counts again from nothing after the channel was lost, but not when it first listens', async () => {
    const { pace, hear, listening } = setUp({ room: 1 });
    pace.delayFor('a', 'a1');
    await listening();
    expect(pace.inFlight('a')).toBe(1);
    hear({ resync: true });
    expect(pace.inFlight('a')).toBe(0);
    expect(pace.delayFor('a', 'a2')).toBe(0);
  });

  it('stops counting a start it has not heard end of for ten minutes', async () => {
    const { pace, listening, advance } = setUp({ room: 1 });
    await listening();
    pace.delayFor('a', 'a1');
    advance(11 * 60_000);
    expect(pace.delayFor('a', 'a2')).toBe(0);
    expect(pace.inFlight('a')).toBe(1);
  });

  it('puts no start off longer than its bound', async () => {
    const { pace, listening } = setUp({ room: 1, minPerSecond: 1, maxDelayMs: 2_500 });
    await listening();
    expect(['a1', 'a2', 'a3', 'a4'].map((id) => pace.delayFor('a', id))).toEqual([0, 1000, 2000, 2500]);
  });
});
