// stripe-mock, Stripe's own mock of its API (built from its OpenAPI spec), which the billing tests
// call through the official SDK. Built from source once with `go install` (scripts/go-tool.ts).
import { goTool } from './go-tool';

export const STRIPE_MOCK_VERSION = 'v0.203.0';
const stripeMock = goTool({
  name: 'stripe-mock',
  module: 'github.com/stripe/stripe-mock',
  version: STRIPE_MOCK_VERSION,
  binary: 'stripe-mock',
  envVar: 'STRIPE_MOCK_BINARY',
});

/** `<cache>/stripe-mock-v…/stripe-mock`, beside the Temporal CLI's and MinIO's. */
export const cachedStripeMockPath = stripeMock.cachedPath;
/** STRIPE_MOCK_BINARY, then the cache folder; undefined when neither has it. */
export const findStripeMock = stripeMock.find;
/** findStripeMock, or else `go install` it into the cache folder (a minute, once). */
export const ensureStripeMock = stripeMock.ensure;
