// Lets @modelcontextprotocol/conformance 0.2.0-alpha.12 start on Node 20: its bundle imports
// fs.globSync (Node 22) at the top, though the server scenarios never call it. Registered with
// `node --import`, this load hook drops that one import and binds the name to fs.globSync when the
// running Node has it, or to a function that throws saying so.
import { register } from 'node:module';

if (import.meta.url.endsWith('?hooks')) {
  // (this module is also the hooks module)
} else {
  register(`${import.meta.url}?hooks`);
}

export async function load(url, context, nextLoad) {
  const result = await nextLoad(url, context);
  if (!url.includes('/@modelcontextprotocol/conformance/dist/')) return result;
  const source = String(result.source)
    .replace(/^#!.*\n/, '')
    .replace('globSync as a,', '');
  const shim =
    'import * as __fs from "node:fs"; const a = (...args) => { if (__fs.globSync) return __fs.globSync(...args); throw new Error("fs.globSync needs Node 22"); };';
  return { ...result, source: shim + source };
}
