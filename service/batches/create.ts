import type pg from 'pg';
import { readInput } from '../../core/batches/input';
import type { InputLimits, InputLine, LineProblem } from '../../core/batches/input';
import { readMessageRequests, requestAt } from '../../core/batches/message-requests';
import { atBatchRate, lineQuoteMc } from '../../core/batches/pricing';
import type { BatchRates } from '../../core/batches/pricing';
import { getBatch } from '../../core/db/batches';
import type { BatchProblem, BatchRow, LineRequest } from '../../core/db/batches';
import { findIdempotencyClaim } from '../../core/db/idempotency';
import { requestHash } from '../../core/generation/idempotency';
import {
  BudgetExceededError,
  DomainError,
  IdempotencyConflictError,
  InsufficientCreditsError,
  InvalidRequestError,
  QuoteAboveSpendCapError,
} from '../../core/errors';
import { newId } from '../../core/ids';
import { holdBatch, recordFailedBatch } from '../../core/ledger';
import type { KeyedRequest } from '../../core/ledger';
import { creditsToMc, mcToCredits } from '../../core/money';
import { assertScope } from '../../core/accounts/principal';
import type { Principal } from '../../core/accounts/principal';
import { BATCH_ENDPOINTS } from '../../core/vocabulary';
import type { BatchEndpoint, Door } from '../../core/vocabulary';
import { priceRequest } from '../generation/requests';
import type { Serves } from '../generation/requests';
import { refuseCallbacks } from '../generation/pipeline';
import type { PrepareCallback } from '../generation/types';
import type { RequestedCallback } from '../../core/webhooks/job-callbacks';
import type { FileService } from './files';
import type { BatchGateway } from './temporal-gateway';
import type { LineParser } from './types';

export interface CreateDeps {
  pool: pg.Pool;
  files: FileService;
  gateway: BatchGateway;
  rates: BatchRates;
  serves: Serves;
  /** How long `completion_window: "24h"` lasts (24 h; shorter only in tests). */
  completionWindowMs: number;
  log: (message: string, err: unknown) => void;
  /** Checks a callback URL named on the batch; without it such a batch is refused. */
  prepareCallback?: PrepareCallback | undefined;
}

/**
 * Where a batch's requests come from: an uploaded JSONL file (OpenAI's Batch API; problems make the
 * batch `failed`) or the call itself (Anthropic's Message Batches; problems are the call's 400).
 */
export type BatchInput =
  { format: 'openai'; inputFileId: string } | { format: 'anthropic'; requests: readonly unknown[] };

export interface NewBatchRequest {
  input: BatchInput;
  endpoint: BatchEndpoint;
  /** The door that speaks the batch's endpoint: its lines are priced as that door prices them. */
  door: Door;
  metadata: Record<string, string> | null;
  /** The batch's own cap on its whole price (`max_credits`), as the door names it. */
  spendCap?: { credits: number; param: string } | undefined;
  /** Reads a line's body as the endpoint does (the door that speaks it). */
  parse: LineParser;
  /** Runs the pricing of a line so that its errors name parameters as the door does. */
  inWords: <T>(work: () => Promise<T>) => Promise<T>;
  /** A callback URL named on the batch: its batch events go there too (checked before the file is read). */
  callback?: RequestedCallback | undefined;
  /** Its Idempotency-Key with what it stands for: a repeat within 24 h answers the batch made first. */
  idempotency?: { key: string; route: string; body: unknown } | undefined;
}

/** A batch's `errors` lists at most this many problems, then says how many more there were. */
const MAX_PROBLEMS = 100;
/** A refused batch's answer names at most this many. */
const MAX_REFUSED = 5;

interface ReadInput {
  inputFileId: string | null;
  lines: InputLine[];
  problems: LineProblem[];
  /** Names a line's body in a problem: its line in the file, or its params' place in `requests`. */
  at: (line: number) => string;
  /** A problem of a line's body: the parameter as this format names it. */
  paramAt: (line: number, param: string | null) => string | null;
}

/**
 * Refuses a batch of inline requests with its problems (the first few), as a 400 naming the first
 * one's parameter: nothing is recorded or held.
 */
function refusal(problems: LineProblem[]): InvalidRequestError {
  const shown = problems.slice(0, MAX_REFUSED).map((p) => p.message);
  const more = problems.length - shown.length;
  return new InvalidRequestError(
    `${shown.join(' ')}${more > 0 ? ` (and ${more} more ${more === 1 ? 'problem' : 'problems'})` : ''}`,
    problems[0]?.param ?? undefined,
  );
}

/**
 * Making a batch: the whole file (or the inline requests) is read and every line parsed and priced
 * first (as its endpoint would, at the batch rate of its kind). A line that is wrong makes the batch
 * `failed` with every problem by line number (inline requests: the call is refused with them), and
 * nothing is held. Otherwise the whole price is held in one ledger
 * movement (402 when the account, or the key's budget, cannot cover it; then nothing is recorded)
 * and the batch's workflow is started; should that start fail, the reconciler starts it shortly.
 */
export function createBatchCreation(deps: CreateDeps) {
  const limits: InputLimits = { maxLineBytes: deps.files.limits.maxLineBytes, maxLines: deps.files.limits.maxLines };

  return async function create(principal: Principal, req: NewBatchRequest): Promise<BatchRow> {
    // A key that may not make what the endpoint makes is refused whole, before its requests are read.
    assertScope(principal, BATCH_ENDPOINTS[req.endpoint]);
    const keyed = req.idempotency && {
      accountId: principal.accountId,
      key: req.idempotency.key,
      requestHash: requestHash(req.idempotency.route, req.idempotency.body),
    };
    const first = await repeated(deps.pool, principal, keyed);
    if (first) return first;
    const callback =
      req.callback && (await (deps.prepareCallback ?? refuseCallbacks)(principal, req.callback, 'batch'));
    const input = await read(deps.files, limits, principal, req);
    const { lines, problems } = await priceLines(deps, principal, req, input);

    const base: BatchBase = {
      id: newId('batch'),
      accountId: principal.accountId,
      apiKeyId: principal.apiKeyId,
      endpoint: req.endpoint,
      kind: BATCH_ENDPOINTS[req.endpoint],
      inputFileId: input.inputFileId,
      metadata: req.metadata,
      callback,
    };
    if (problems.length > 0 && req.input.format === 'anthropic') throw refusal(problems);
    if (problems.length > 0) return recordFailed(deps.pool, base, input, problems);

    const quoteMc = lines.reduce((sum, l) => sum + l.quoteMc, 0);
    if (req.spendCap && quoteMc > creditsToMc(req.spendCap.credits))
      throw new QuoteAboveSpendCapError(mcToCredits(quoteMc), req.spendCap.credits, req.spendCap.param);
    return holdAndStart(deps, principal, base, lines, keyed);
  };
}

/** What a batch is recorded with, failed or held. */
type BatchBase = Omit<Parameters<typeof holdBatch>[1], 'lines' | 'budgeted' | 'completionWindowMs' | 'keyed'>;

type PricedLine = { line: number; customId: string; request: LineRequest; quoteMc: number };

/** The batch's requests: its uploaded file's lines, or the call's own `requests`. */
async function read(
  files: FileService,
  limits: InputLimits,
  principal: Principal,
  req: NewBatchRequest,
): Promise<ReadInput> {
  if (req.input.format === 'anthropic')
    return {
      inputFileId: null,
      ...readMessageRequests(req.input.requests, limits),
      at: (line) => `${requestAt(line)}.params`,
      paramAt: (line, param) => `${requestAt(line)}.params${param === null ? '' : `.${param}`}`,
    };
  const { file, data } = await files.input(principal, req.input.inputFileId);
  return {
    inputFileId: file.id,
    ...readInput(data, req.endpoint, limits),
    at: (line) => `Line ${line}`,
    paramAt: (_line, param) => param,
  };
}

/** The batch an Idempotency-Key repeat stands for (the first request's; nothing is read, priced or held again). */
async function repeated(
  pool: pg.Pool,
  principal: Principal,
  keyed: KeyedRequest | undefined,
): Promise<BatchRow | undefined> {
  if (!keyed) return undefined;
  const prior = await findIdempotencyClaim(pool, keyed, 'batch');
  if (prior?.outcome === 'conflict') throw new IdempotencyConflictError();
  return prior && (await getBatch(pool, principal.accountId, prior.id));
}

/** Every line parsed and priced as its endpoint would, at the batch rate; a line that is wrong is a problem naming it. */
async function priceLines(
  deps: CreateDeps,
  principal: Principal,
  req: NewBatchRequest,
  input: ReadInput,
): Promise<{ lines: PricedLine[]; problems: BatchProblem[] }> {
  const problems: BatchProblem[] = [...input.problems];
  const lines: PricedLine[] = [];
  for (const l of input.lines) {
    try {
      const parsed = await req.parse(l.body);
      const request = await req.inWords(async () =>
        Array.from({ length: parsed.count ?? 1 }, () => {
          // A batch's chat lines are never free replies: they are billed per token, as group B's are.
          const p = priceRequest(parsed.request, principal, req.door, deps.serves);
          const g = { kind: p.kind, model: p.model, prompt: p.prompt, params: p.params, internal: p.internal };
          return atBatchRate({ ...g, quoteMc: p.quoteMc }, deps.rates);
        }),
      );
      const lineRequest: LineRequest = { generations: request, ...(parsed.answer ? { answer: parsed.answer } : {}) };
      const quoteMc = lineQuoteMc(lineRequest);
      if (parsed.spendCap !== undefined && quoteMc > creditsToMc(parsed.spendCap))
        throw new QuoteAboveSpendCapError(mcToCredits(quoteMc), parsed.spendCap, 'max_credits');
      lines.push({ line: l.line, customId: l.customId, request: lineRequest, quoteMc });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      const param = input.paramAt(l.line, typeof err.details.param === 'string' ? err.details.param : null);
      problems.push({ code: err.type, message: `${input.at(l.line)}: ${err.message}`, param, line: l.line });
    }
  }
  problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  return { lines, problems };
}

/** Records the batch `failed` with its problems (the first MAX_PROBLEMS, then how many more); nothing is held. */
function recordFailed(pool: pg.Pool, base: BatchBase, input: ReadInput, problems: BatchProblem[]): Promise<BatchRow> {
  const shown = problems.slice(0, MAX_PROBLEMS);
  if (problems.length > MAX_PROBLEMS)
    shown.push({
      code: 'too_many_errors',
      message: `${problems.length - MAX_PROBLEMS} more lines have problems; fix these and try again.`,
      param: null,
      line: null,
    });
  return recordFailedBatch(pool, {
    ...base,
    total: input.lines.length + input.problems.length,
    errors: shown,
  });
}

/** Holds the whole price in one ledger movement and starts the batch's workflow (the reconciler starts it should that fail). */
async function holdAndStart(
  deps: CreateDeps,
  principal: Principal,
  base: BatchBase,
  lines: PricedLine[],
  keyed: KeyedRequest | undefined,
): Promise<BatchRow> {
  const held = await holdBatch(deps.pool, {
    ...base,
    completionWindowMs: deps.completionWindowMs,
    lines,
    budgeted: principal.budgeted === true,
    keyed,
  });
  // The same request made the batch meanwhile (two repeats at once): answer that one.
  if (held.outcome === 'repeat') {
    const made = await getBatch(deps.pool, principal.accountId, held.batchId);
    if (made) return made;
    throw new IdempotencyConflictError();
  }
  if (held.outcome === 'refused')
    throw new InsufficientCreditsError(mcToCredits(held.requiredMc), mcToCredits(held.availableMc));
  if (held.outcome === 'over_budget')
    throw new BudgetExceededError({
      keyId: held.keyId,
      requiredCredits: mcToCredits(held.requiredMc),
      availableCredits: mcToCredits(held.availableMc),
      budgetCredits: mcToCredits(held.maxMc),
      period: held.period,
    });
  await deps.gateway.start(held.batch).catch((err: unknown) => {
    deps.log(`batch ${held.batch.id}: its workflow could not be started now; the reconciler will start it`, err);
  });
  return held.batch;
}
