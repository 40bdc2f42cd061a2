// stripe-mock, Stripe's own mock of its API (built from its OpenAPI spec), which the billing tests
// call through the official SDK. Built from source once with `go install` (scripts/go-install.ts).
import { dirname, join } from 'node:path';
import { cachedTemporalCliPath } from '../runtime/temporal-cli';
import { findBuiltBinary } from '../runtime/go-install';
import { goInstall } from './go-install';

export const STRIPE_MOCK_VERSION = 'v0.203.0';
const MODULE = `github.com/stripe/stripe-mock@${STRIPE_MOCK_VERSION}`;

export class StripeMockBinaryError extends Error {
  override readonly name = 'StripeMockBinaryError';
}

/** `<cache>/stripe-mock-v…/stripe-mock`, beside the Temporal CLI's and MinIO's. */
export function cachedStripeMockPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(dirname(dirname(cachedTemporalCliPath({ env }))), `stripe-mock-${STRIPE_MOCK_VERSION}`, 'stripe-mock');
}

/** STRIPE_MOCK_BINARY, then the cache folder; undefined when neither has it. */
export function findStripeMock(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return findBuiltBinary(env, 'STRIPE_MOCK_BINARY', cachedStripeMockPath(env), (m) => new StripeMockBinaryError(m));
}

/** findStripeMock, or else `go install` it into the cache folder (a minute, once). */
export async function ensureStripeMock(env: NodeJS.ProcessEnv = process.env, progress: (line: string) => void = () => undefined): Promise<string> {
  const found = await findStripeMock(env);
  if (found) return found;
  const target = cachedStripeMockPath(env);
  await goInstall({
    module: MODULE, binary: 'stripe-mock', target, env, progress,
    missingGo: `Go is needed to build stripe-mock (${MODULE}) into ${target}, or set STRIPE_MOCK_BINARY to a stripe-mock binary.`,
    fail: (m) => new StripeMockBinaryError(m),
  });
  progress(`built ${target}`);
  return target;
}
