// `npm run stripe-mock`: prints the path of the stripe-mock the billing tests use, building it
// first if needed (progress on stderr). .ci/run calls it so that the tests find it ready.
import { ensureStripeMock } from './stripe-mock';

try {
  process.stdout.write(
    `${await ensureStripeMock(process.env, (line) => process.stderr.write(`[stripe-mock] ${line}\n`))}\n`,
  );
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
