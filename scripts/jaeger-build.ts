// `npm run jaeger`: prints the path of the Jaeger the trace test uses, building it first if needed
// (progress on stderr). .ci/run calls it so that the test finds it ready.
import { ensureJaeger } from './jaeger';

try {
  process.stdout.write(`${await ensureJaeger(process.env, (line) => process.stderr.write(`[jaeger] ${line}\n`))}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
