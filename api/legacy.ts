import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { getAccountCredits } from '../core/db/accounts';
import { getGeneration } from '../core/db/generations';
import { claimIdempotencyKey } from '../core/db/idempotency';
import { IdempotencyConflictError, InsufficientCreditsError, NotFoundError } from '../core/errors';
import { parseIdempotencyKey, requestHash } from '../core/idempotency';
import { legacyGenerateBody, toWorkflowInput } from '../core/generation-request';
import { GENERATION_ID_PATTERN } from '../core/ids';
import { mcToCredits } from '../core/money';
import type { OutputStore } from '../core/storage';
import { principalOf, requireApiKey } from './auth';
import { parseBody } from './body';
import type { RateLimiter } from './rate-limit';
import type { GenerationGateway } from './temporal-gateway';
import { creditsView, generationRecord } from './views';

export interface LegacyDeps {
  pool: pg.Pool;
  gateway: GenerationGateway;
  store: OutputStore;
  limiter: RateLimiter;
  syncWaitMs: number;
}

/** RFC 7240: `Prefer: respond-async` asks for the accepted state at once instead of the result. */
function prefersAsync(prefer: string | string[] | undefined): boolean {
  const values = Array.isArray(prefer) ? prefer : prefer ? [prefer] : [];
  return values.some((v) => v.split(',').some((p) => p.trim().toLowerCase() === 'respond-async'));
}

/** Group C: per-kind generate, polling and credits, without a version prefix. */
export async function legacyRoutes(app: FastifyInstance, deps: LegacyDeps): Promise<void> {
  app.addHook('onRequest', requireApiKey(deps, 'unauthorized'));

  const readGeneration = async (accountId: string, id: string) => {
    const g = GENERATION_ID_PATTERN.test(id) ? await getGeneration(deps.pool, accountId, id) : undefined;
    if (!g) throw new NotFoundError(`Generation '${id}' not found.`, { param: 'id' });
    return g;
  };

  /** The generation id of the first request that used this Idempotency-Key (this one's, if first). */
  const claimedId = async (accountId: string, key: string, body: unknown, generationId: string): Promise<string> => {
    const claim = await claimIdempotencyKey(deps.pool, { accountId, key, requestHash: requestHash('POST /api/generate', body), generationId });
    if (claim.outcome === 'conflict') throw new IdempotencyConflictError();
    return claim.generationId;
  };

  app.post('/api/generate', async (request, reply) => {
    const principal = principalOf(request);
    const body = parseBody(legacyGenerateBody, request.body);
    const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
    // Validated and priced before the key is claimed: a refused request does not use up its key.
    const priced = toWorkflowInput(body, principal);
    const input = idempotencyKey === undefined ? priced : { ...priced, generationId: await claimedId(principal.accountId, idempotencyKey, body, priced.generationId) };

    const admission = await deps.gateway.submit(input);
    if (!admission.admitted) {
      throw new InsufficientCreditsError(mcToCredits(admission.requiredMc), mcToCredits(admission.availableMc));
    }
    // Images and chat replies finish within the call (unless the client prefers not to wait);
    // past the bound the client polls, as for video.
    if (input.kind !== 'video') {
      if (prefersAsync(request.headers.prefer)) reply.header('Preference-Applied', 'respond-async');
      else await deps.gateway.awaitFinish(input.generationId, deps.syncWaitMs);
    }
    const g = await readGeneration(principal.accountId, input.generationId);
    return { generation: await generationRecord(g, deps.store) };
  });

  app.get<{ Params: { id: string } }>('/api/generate/:id', async (request) => {
    const g = await readGeneration(principalOf(request).accountId, request.params.id);
    return { generation: await generationRecord(g, deps.store) };
  });

  app.get('/api/credits', async (request) => {
    const credits = await getAccountCredits(deps.pool, principalOf(request).accountId);
    if (!credits) throw new NotFoundError('Account not found.');
    return creditsView(credits);
  });
}
