/**
 * The fault run's upstream check (faults/upstreams.ts) is fair to the run's own outages and still
 * strict: a routed image either succeeded, served by one of the two upstreams with its cost, or
 * failed the way an outage explains (released, nothing charged, an outage's code).
 */
import { describe, expect, it } from 'vitest';
import type { GenerationFact } from '../../../faults/ledger-checks';
import { judgeRouted } from '../../../faults/upstreams';
import type { RouteRow } from '../../../faults/upstreams';
import { UPSTREAM_PROMPT } from '../../../faults/workload';

const counts = { flaky: { submits: 10, failed: 5, served: 5 }, steady: { submits: 5, failed: 0, served: 5 } };

const image = (id: string, over: Partial<GenerationFact> = {}): GenerationFact => ({
  id,
  accountId: 'acct',
  kind: 'image',
  status: 'succeeded',
  prompt: `${UPSTREAM_PROMPT} #${id}`,
  chargedMc: 3000,
  code: null,
  params: {},
  holdState: 'settled',
  holdAmountMc: 3000,
  holdChargedMc: 3000,
  holdEntries: 1,
  charges: 1,
  chargedSumMc: 3000,
  releases: 0,
  batchId: null,
  ...over,
});
const failed = (id: string, code: string, over: Partial<GenerationFact> = {}): GenerationFact =>
  image(id, {
    status: 'failed',
    code,
    chargedMc: 0,
    holdState: 'released',
    holdChargedMc: 0,
    charges: 0,
    chargedSumMc: 0,
    releases: 1,
    ...over,
  });
const row = (
  id: string,
  served_by: string | null,
  cost_eur: string | null = '0.030000',
  tried = ['flaky', 'steady'],
): RouteRow => ({ generation_id: id, tried, served_by, cost_eur });

describe('the upstream fault check', () => {
  const served = [image('g1'), image('g2')];
  const rows = [row('g1', 'steady'), row('g2', 'flaky', '0.020000', ['flaky'])];

  it('holds when every image was served with its cost, and counts the images outages failed', () => {
    const check = judgeRouted([...served, failed('g3', 'not_started'), failed('g4', 'settle_failed')], rows, counts);
    expect(check.ok, check.detail).toBe(true);
    expect(check.detail).toMatch(/4 images \(2 served, 2 failed by an outage: not_started ×1, settle_failed ×1\)/);
  });

  it('fails a succeeded image whose record has no upstream or no cost', () => {
    expect(judgeRouted([...served, image('g5')], [...rows, row('g5', null)], counts)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/g5: served by nobody recorded/),
    });
    expect(judgeRouted([...served, image('g5')], rows, counts)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/g5: served by nobody recorded/),
    });
    expect(judgeRouted([...served, image('g5')], [...rows, row('g5', 'steady', null)], counts)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/g5: no cost recorded/),
    });
  });

  it('fails a failure no outage explains, or one that charged', () => {
    expect(judgeRouted([...served, failed('g6', 'provider_error')], rows, counts)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/g6: failed \(provider_error/),
    });
    expect(
      judgeRouted(
        [...served, failed('g7', 'not_started', { holdState: 'settled', charges: 1, chargedMc: 3000 })],
        rows,
        counts,
      ).ok,
    ).toBe(false);
  });

  it('fails when the fallback was never exercised, outages or not', () => {
    expect(judgeRouted([image('g1')], [row('g1', 'flaky', '0.020000', ['flaky'])], counts).detail).toMatch(
      /never exercised/,
    );
    expect(judgeRouted([failed('g3', 'not_started')], [], counts).ok).toBe(false);
  });
});
