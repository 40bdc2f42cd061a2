import { describe, expect, it, vi } from 'vitest';
import { parseNotice } from '../../../../core/ledger';
import { createSimulator } from '../../../../core/providers/simulator';
import type { ProviderJob } from '../../../../core/providers/types';

/** The simulator as a provider people know, and the progress notice (item 1). */
const job = (kind: ProviderJob['kind'], prompt: string): ProviderJob => ({
  generationId: 'gen_1',
  kind,
  model: 'kling',
  prompt,
  params: kind === 'video' ? { width: 64, height: 36, seconds: 1 } : {},
  internal: {},
});

describe('the simulator', () => {
  it('reports its progress in steps that never go back, ending at 100 before the file is made', async () => {
    const seen: number[] = [];
    const result = await createSimulator().run(job('video', 'a field sim:delay=600'), {
      heartbeat: () => undefined,
      signal: new AbortController().signal,
      progress: (p) => seen.push(p),
    });
    expect(result.file?.contentType).toBe('video/webm');
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(100);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBeGreaterThanOrEqual(5);
    expect(seen.every((p) => p % 5 === 0)).toBe(true);
  });

  it('paces a streamed chat by default (a 20 ms wait between tokens); sim:pace=0 is one burst', async () => {
    const sim = createSimulator({ latencyMs: 0 });
    // The waits the stream asks for, as they are asked: what a busy machine cannot change.
    const timers = vi.spyOn(globalThis, 'setTimeout');
    const stream = async (prompt: string) => {
      timers.mockClear();
      const at: number[] = [];
      for await (const e of sim.streamChat(job('chat', prompt), new AbortController().signal))
        if (e.type === 'delta') at.push(performance.now());
      const waits = timers.mock.calls.map(([, ms]) => ms).filter((ms) => typeof ms === 'number' && ms > 0);
      return { count: at.length, total: at.at(-1)! - at[0]!, waits };
    };
    try {
      const paced = await stream('hello sim:tokens=11');
      expect(paced.count).toBe(11);
      expect(paced.waits).toEqual(Array.from({ length: 10 }, () => 20));
      // A timer never fires early, so this bound holds on any machine.
      expect(paced.total).toBeGreaterThanOrEqual(10 * 18);
      const burst = await stream('hello sim:tokens=11 sim:pace=0');
      expect(burst.count).toBe(11);
      expect(burst.waits).toEqual([]);
      const slow = await stream('hello sim:tokens=3 sim:pace=100');
      expect(slow.waits).toEqual([100, 100]);
      expect(slow.total).toBeGreaterThanOrEqual(2 * 95);
    } finally {
      timers.mockRestore();
    }
  });
});

describe('the progress notice', () => {
  it('is parsed beside the status and credit notices, whose formats stay as they were', () => {
    expect(parseNotice('acct_1:gen_1:running')).toEqual({
      accountId: 'acct_1',
      generationId: 'gen_1',
      status: 'running',
    });
    expect(parseNotice('acct_1::credited')).toEqual({ accountId: 'acct_1', credited: true });
    expect(parseNotice('acct_1:gen_1:progress:40')).toEqual({
      accountId: 'acct_1',
      generationId: 'gen_1',
      progress: 40,
    });
    for (const bad of [
      'acct_1:gen_1:progress',
      'acct_1:gen_1:progress:x',
      'acct_1:gen_1:progress:400',
      'acct_1::progress:5',
      'acct_1:gen_1:paused',
    ]) {
      expect(parseNotice(bad), bad).toBeUndefined();
    }
  });
});
