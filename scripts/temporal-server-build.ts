// `npm run temporal:server`: prints the paths of the Temporal server, its schema tool and the UI
// server (one a line), building them first if needed (progress on stderr).
import { ensureTemporalServer } from './temporal-server';

try {
  const { server, sqlTool, ui } = await ensureTemporalServer(process.env, (line) =>
    process.stderr.write(`[temporal-server] ${line}\n`),
  );
  process.stdout.write(`${server}\n${sqlTool}\n${ui}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
