/**
 * The Open Responses compliance tests as packaged on PyPI (`llm-comply`, which carries the
 * openresponses.org suite's cases and its OpenAPI schema) run against our /v1 over real HTTP.
 * The tool is installed into a virtual environment in the gensvc cache on first use. Cases for
 * what the service does not serve (images, reasoning, compaction) are expected to fail,
 * and the test says so: a change either way shows up here.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

const run = promisify(execFile);
const VERSION = '0.5.0';
const venv = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'gensvc', `llm-comply-${VERSION}`);
const tool = join(venv, 'bin', 'llm-comply');

/** What the service serves, and the cases of what it refuses on purpose (docs/decisions/0035-responses-api.md). */
const SERVED = [
  'basic-response',
  'system-prompt',
  'multi-turn',
  'tool-calling',
  'streaming-response',
  'streaming-usage',
  'assistant-phase',
  'response-output-phase-schema',
  'error-handling',
];
const NOT_SERVED = ['image-input', 'reasoning-summary', 'compact-response', 'compact-missing-model'];

interface CaseResult {
  id: string;
  status: 'passed' | 'failed' | 'skipped';
  errors?: string[];
}

let h: Harness;
let baseURL: string;
beforeAll(async () => {
  if (!existsSync(tool)) {
    await run('python3', ['-m', 'venv', venv]);
    await run(join(venv, 'bin', 'pip'), ['install', '--quiet', `llm-comply==${VERSION}`]);
  }
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
}, 240_000);
afterAll(async () => {
  await h?.close();
});

describe('Open Responses compliance (llm-comply)', () => {
  it('every case for what the service serves passes (function tools on the simulator too); images, reasoning and compaction are refused', async () => {
    const { key } = await h.account({ credits: 1000 });
    const out = await run(
      tool,
      [
        '--format',
        'open-responses',
        'run',
        '--base-url',
        baseURL,
        '--api-key',
        key,
        '--model',
        'claude-haiku',
        '--json',
        '--timeout',
        '30',
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    )
      // The tool exits non-zero when a case fails; its JSON report is on stdout either way.
      .catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    const report = JSON.parse(out.stdout) as { results: CaseResult[] };
    const byId = new Map(report.results.map((r) => [r.id, r]));
    const summary = report.results
      .map((r) => `${r.id}: ${r.status}${r.errors ? ` (${r.errors.join('; ')})` : ''}`)
      .join('\n');
    for (const id of SERVED) expect(byId.get(id)?.status, `${id}\n${summary}`).toBe('passed');
    for (const id of NOT_SERVED) expect(byId.get(id)?.status, `${id}\n${summary}`).not.toBe('passed');
    expect(report.results.map((r) => r.id).sort()).toEqual([...SERVED, ...NOT_SERVED].sort());
  }, 120_000);
});
