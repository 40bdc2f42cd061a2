#!/usr/bin/env node
// `npx gensvc …`: the operator CLI (cli/main.ts). From a checkout it runs the TypeScript through
// tsx's ESM loader, from any directory; in the image, which has neither the sources nor tsx, the
// compiled dist/cli/main.js (npm run build).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('../cli/main.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
