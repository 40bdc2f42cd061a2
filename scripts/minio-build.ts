// `npm run minio`: prints the path of the MinIO server the S3 tests use, building it first if
// needed (progress on stderr). .ci/run calls it so that the tests find it ready.
import { ensureMinio } from './minio';

try {
  process.stdout.write(`${await ensureMinio(process.env, (line) => process.stderr.write(`[minio] ${line}\n`))}\n`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
