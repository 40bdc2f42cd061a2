// `npm run temporal:cli`: prints the path of a usable Temporal CLI on stdout, building it first
// if needed (progress on stderr), so shell scripts can do TEMPORAL_CLI=$(npm run -s temporal:cli).
import { ensureTemporalCli } from '../runtime/temporal-cli';

try {
  process.stdout.write(`${await ensureTemporalCli({ env: process.env })}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
