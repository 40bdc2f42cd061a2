import { run } from './run';

/** `npx gensvc …` (through bin/gensvc.mjs): the only place the CLI reads argv and the environment. */
process.exitCode = await run(
  process.argv.slice(2),
  { GENSVC_URL: process.env.GENSVC_URL, ADMIN_TOKEN: process.env.ADMIN_TOKEN },
  {
    fetch: globalThis.fetch,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  },
);
