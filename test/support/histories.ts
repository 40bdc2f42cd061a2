import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { inject } from 'vitest';

/**
 * Histories recorded by the current workflow code. Those of the code deployed before it are in
 * previous/: the workflows that may still be open when this code is deployed (docs/operations.md,
 * "Retiring replay-only code", says when each folder goes).
 */
export const CURRENT_HISTORIES = new URL('../fixtures/histories/current/', import.meta.url);

/** The ids of the patch markers (`patched()` calls) recorded in a history, in order. */
export function patchIdsOf(historyJson: string): string[] {
  type Marker = { markerName?: string; details?: Record<string, { payloads?: { data?: string }[] }> };
  const events = (JSON.parse(historyJson) as { events?: { markerRecordedEventAttributes?: Marker }[] }).events ?? [];
  return events.flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    return data === undefined ? [] : [(JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as { id: string }).id];
  });
}

/**
 * Keeps a closed workflow's history as a fixture `name` of the current workflow code
 * (test/fixtures/histories/current/; test/unit/workflows/replay-fixtures.test.ts replays them all), in the
 * Temporal CLI's JSON format; never over one already kept, since a committed fixture stands for
 * workflows that may still be running.
 */
export async function keepHistory(workflowId: string, name: string): Promise<void> {
  const file = new URL(`${name}.json`, CURRENT_HISTORIES);
  if (existsSync(file)) return;
  const { stdout } = await promisify(execFile)(
    inject('temporalCliPath'),
    ['workflow', 'show', '--address', inject('temporalAddress'), '--workflow-id', workflowId, '--output', 'json'],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  await writeFile(file, stdout);
}
