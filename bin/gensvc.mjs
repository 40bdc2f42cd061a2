#!/usr/bin/env node
// `npx gensvc …`: runs the TypeScript CLI (cli/main.ts) through tsx's ESM loader, from any directory.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('../cli/main.ts');
