// A real stripe-mock for the billing tests, built by `npm run stripe-mock` (.ci/run runs it).
import { cachedStripeMockPath, findStripeMock, STRIPE_MOCK_VERSION } from '../../scripts/stripe-mock';
import { freePort } from '../../runtime/process';
import { onFreePorts, start, stopped, waitUntil } from './servers';
import type { TestServer } from './servers';

export interface StripeMockServer extends TestServer {
  url: string;
}

export async function startStripeMock(): Promise<StripeMockServer> {
  const binary = await findStripeMock();
  if (!binary) {
    throw new Error(
      `stripe-mock ${STRIPE_MOCK_VERSION} is not built; run \`npm run stripe-mock\` (go install into ${cachedStripeMockPath()}, once; .ci/run does this) or set STRIPE_MOCK_BINARY`,
    );
  }
  return onFreePorts(async () => {
    const port = await freePort();
    const s = start('stripe-mock', binary, ['-http-addr', `127.0.0.1:${port}`], process.env);
    const url = `http://127.0.0.1:${port}`;
    // Any answer means it listens (without a key it says 401).
    await waitUntil(
      'stripe-mock',
      s,
      async () => (await fetch(`${url}/v1/charges`).catch(() => undefined)) !== undefined,
    ).catch(async (err: unknown) => {
      await stopped(s);
      throw err;
    });
    return { port, url, stop: () => stopped(s) };
  });
}
