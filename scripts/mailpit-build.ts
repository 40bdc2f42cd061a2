// `npm run mailpit`: prints the path of the Mailpit the alert email tests use, building it first if
// needed (progress on stderr). .ci/run calls it so that the tests find it ready.
import { mailpit } from './mailpit';

try {
  process.stdout.write(`${await mailpit.ensure(process.env, (line) => process.stderr.write(`[mailpit] ${line}\n`))}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
