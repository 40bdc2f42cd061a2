import { readFileSync, existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOORS } from '../../../core/vocabulary';

const root = new URL('../../../', import.meta.url);

describe('doors', () => {
  it('go by one name: the vocabulary, the dependency rules and the folders under api/ agree', () => {
    const rules = readFileSync(new URL('.dependency-cruiser.cjs', root), 'utf8');
    const listed = /const GENERATION_DOORS = \[([^\]]*)\]/.exec(rules)?.[1];
    expect(listed?.split(',').map((name) => name.trim().replace(/^'|'$/g, ''))).toEqual([...DOORS]);
    for (const door of DOORS) expect(existsSync(new URL(`api/${door}/`, root))).toBe(true);
  });
});
