// docs/configuration.md is the reference of every environment variable core/config/env.ts parses.
// Each variable is one table row whose first cell is its name in backticks; this test keeps the
// rows and the schema's keys the same set, and checks that every other variable-like name the
// page mentions (`SOME_NAME`, `SOME_NAME=value`) is one the schema has.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../core/config/env';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const doc = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
const schemaKeys = Object.keys(configSchema.shape).sort();

/** The first cell of every table row that names a variable: `| \`NAME\` | …`. */
const rows = [...doc.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/gm)].map((m) => m[1]!);

/** Names in code spans that look like environment variables (at least one underscore). */
const mentioned = new Set(
  [...doc.matchAll(/`([^`\n]+)`/g)].flatMap((m) =>
    [...m[1]!.matchAll(/(?<![A-Za-z0-9_])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![a-z0-9_])/g)].map((n) => n[0]),
  ),
);

describe('docs/configuration.md', () => {
  it('has a row for every variable of the schema', () => {
    expect(schemaKeys.length).toBeGreaterThan(0);
    expect(schemaKeys.filter((key) => !rows.includes(key))).toEqual([]);
  });

  it('has no row for a variable the schema does not parse', () => {
    expect(rows.filter((name) => !schemaKeys.includes(name))).toEqual([]);
  });

  it('describes each variable once', () => {
    expect(rows.filter((name, i) => rows.indexOf(name) !== i)).toEqual([]);
  });

  it('mentions no variable the schema does not parse', () => {
    expect([...mentioned].filter((name) => !schemaKeys.includes(name)).sort()).toEqual([]);
  });
});
