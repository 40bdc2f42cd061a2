// `npm run check`: the static checks of `npm test` side by side, each an npm script of its own:
// types (TypeScript 7), lint rules (oxlint), formatting (prettier), import floors
// (dependency-cruiser) and unused code (knip). Most of them wait on one program build or on the
// disk, so together they take little longer than the slowest alone. Each one's output is printed
// whole when it ends, with its time; the exit code is 1 when any failed.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const CHECKS = ['typecheck', 'lint:code', 'lint:format', 'deps', 'unused'] as const;

interface Outcome {
  name: string;
  code: number | null;
  output: string;
  seconds: number;
}

function run(name: string): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '-s', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    const done = (code: number | null, output: string) =>
      resolve({ name, code, output, seconds: (performance.now() - started) / 1000 });
    child.on('error', (err) => done(1, `${err.message}\n`));
    child.on('close', (code) => done(code, Buffer.concat(chunks).toString()));
  });
}

const outcomes = await Promise.all(
  CHECKS.map(async (name) => {
    const outcome = await run(name);
    const verdict = outcome.code === 0 ? 'ok' : `failed (exit ${outcome.code})`;
    process.stdout.write(`${outcome.output}${outcome.output.endsWith('\n') || !outcome.output ? '' : '\n'}`);
    process.stdout.write(`npm run ${name}: ${verdict} in ${outcome.seconds.toFixed(1)} s\n`);
    return outcome;
  }),
);
if (outcomes.some((o) => o.code !== 0)) process.exitCode = 1;
