/**
 * The official Python clients, `openai` and `anthropic` from PyPI, unmodified, over real HTTP
 * against the simulator (test/support/python-clients.py makes the calls). They are installed into
 * a virtual environment in the gensvc cache on first use. Every token count a client was told is
 * what the ledger charged; the refusals cost nothing and arrive in each door's shape.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const run = promisify(execFile);
const PACKAGES = ['openai==3.57.0', 'anthropic==2.14.0'];
const venv = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
  'gensvc',
  `py-clients-${PACKAGES.join('-').replaceAll('==', '-')}`,
);
const python = join(venv, 'bin', 'python');
const script = join(import.meta.dirname, '..', '..', '..', 'support', 'python-clients.py');
/** claude-haiku's rate per 1,000 output tokens, in millicredits. */
const HAIKU = 700;

let h: Harness;
let base: string;
beforeAll(async () => {
  if (!existsSync(python)) {
    await run('python3', ['-m', 'venv', venv]);
    await run(join(venv, 'bin', 'pip'), ['install', '--quiet', ...PACKAGES]);
  }
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
}, 240_000);
afterAll(async () => {
  await h?.close();
});

interface Told {
  id: string;
  tokens: number;
  text?: string;
}
interface Report {
  openai_whole: Told;
  openai_stream: Told;
  openai_parsed: Told & { recipe: { title: string; minutes: number; steps: string[] } };
  openai_tool: Told & { finish_reason: string; name: string; arguments: { city: string } };
  openai_responses: Told[];
  openai_402: { status: number; body: unknown } | null;
  anthropic_whole: Told & { stop_reason: string };
  anthropic_stream: Told & { events: string[] };
  anthropic_tools: [
    Told & { stop_reason: string; name: string; input: { city: string } },
    Told & { stop_reason: string; types: string[] },
  ];
  anthropic_402: { status: number; body: unknown } | null;
}

describe('the official Python clients', () => {
  it('openai and anthropic: whole, streamed, structured, tools, a second turn, the 402s; each charge is the tokens told', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const { key: poor, accountId: poorId } = await h.account({ credits: 0 });
    const { stdout } = await run(python, [script, base, key, poor], { maxBuffer: 4 * 1024 * 1024 });
    const r = JSON.parse(stdout) as Report;

    expect(r.openai_whole.text!.split(' ')).toHaveLength(7);
    expect(r.openai_whole.tokens).toBe(7);
    expect(r.openai_stream.text!.split(' ')).toHaveLength(6);
    expect(r.openai_stream.tokens).toBe(6);
    expect(r.openai_parsed.recipe).toMatchObject({ title: expect.any(String), minutes: expect.any(Number) });
    expect(Number.isInteger(r.openai_parsed.recipe.minutes)).toBe(true);
    expect(r.openai_tool).toMatchObject({ finish_reason: 'tool_calls', name: 'get_weather' });
    expect(r.openai_tool.arguments.city).toEqual(expect.any(String));
    expect(r.openai_responses.map((t) => t.tokens)).toEqual([3, 4]);
    expect(r.openai_402).toMatchObject({ status: 402, body: { type: 'insufficient_credits', code: 402 } });

    expect(r.anthropic_whole).toMatchObject({ stop_reason: 'end_turn', tokens: 5 });
    expect(r.anthropic_stream.tokens).toBe(4);
    expect(r.anthropic_stream.events[0]).toBe('message_start');
    expect(r.anthropic_stream.events.at(-1)).toBe('message_stop');
    expect(r.anthropic_tools[0]).toMatchObject({ stop_reason: 'tool_use', name: 'get_weather' });
    expect(r.anthropic_tools[0].input.city).toEqual(expect.any(String));
    expect(r.anthropic_tools[1]).toMatchObject({ stop_reason: 'end_turn', types: ['text'] });
    expect(r.anthropic_402).toMatchObject({
      status: 402,
      body: { type: 'error', error: { type: 'billing_error' } },
    });

    const told: Told[] = [
      r.openai_whole,
      r.openai_stream,
      r.openai_parsed,
      r.openai_tool,
      ...r.openai_responses,
      r.anthropic_whole,
      r.anthropic_stream,
      ...r.anthropic_tools,
    ];
    const charges = await eventually(async () => {
      const rows = (
        await h.pool.query<{ id: string; charged_mc: number; status: string }>(
          'SELECT id, charged_mc, status FROM generations WHERE account_id = $1',
          [accountId],
        )
      ).rows;
      return rows.length === told.length && rows.every((g) => g.status === 'succeeded')
        ? new Map(rows.map((g) => [g.id, g.charged_mc]))
        : undefined;
    });
    for (const t of told) expect([t.id, charges.get(t.id)]).toEqual([t.id, chargeForTokens(t.tokens, HAIKU)]);
    const spent = told.reduce((sum, t) => sum + chargeForTokens(t.tokens, HAIKU), 0);
    const balance = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    expect(balance).toEqual(expect.objectContaining({ balance: 10 - spent / 1000, holdsActive: 0 }));
    const poorRows = await h.pool.query('SELECT 1 FROM generations WHERE account_id = $1', [poorId]);
    expect(poorRows.rowCount).toBe(0);
  });
});
