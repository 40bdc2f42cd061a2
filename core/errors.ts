/**
 * Domain failures, one class per documented error. Each carries the HTTP status and the `type`
 * of the error body (DESIGN §6), so a single handler renders every one of them. The class name
 * doubles as the Temporal failure type, which decides whether an activity is retried.
 */
export abstract class DomainError extends Error {
  abstract readonly status: number;
  abstract readonly type: string;
  /** Extra fields rendered next to message/type/code, e.g. `param`, `required`, `available`. */
  readonly details: Record<string, unknown>;

  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }
}

export class InvalidRequestError extends DomainError {
  readonly status = 400;
  readonly type = 'invalid_request_error';
  constructor(message: string, param?: string) {
    super(message, param === undefined ? {} : { param });
  }
}

export class UnknownCostError extends DomainError {
  readonly status = 400;
  readonly type = 'unknown_cost';
  constructor(kind: string, model: string) {
    super(`No price is defined for ${kind} model '${model}'; nothing ran and nothing was charged.`, { param: 'model' });
  }
}

export class ContentPolicyError extends DomainError {
  readonly status = 400;
  readonly type = 'content_policy_violation';
  constructor() {
    super('The prompt was refused by the safety guard; nothing was held or run.', { param: 'prompt' });
  }
}

/** Group C says `unauthorized`, groups A and B say `authentication_error`; the route decides. */
export class UnauthorizedError extends DomainError {
  readonly status = 401;
  readonly type: 'unauthorized' | 'authentication_error';
  constructor(
    message = 'A valid API key is required (Authorization: Bearer <API_KEY>).',
    type: 'unauthorized' | 'authentication_error' = 'unauthorized',
  ) {
    super(message);
    this.type = type;
  }
}

export class InsufficientCreditsError extends DomainError {
  readonly status = 402;
  readonly type = 'insufficient_credits';
  constructor(requiredCredits: number, availableCredits: number) {
    super(`Insufficient credits: ${requiredCredits} required, ${availableCredits} available.`, {
      required: requiredCredits,
      available: availableCredits,
    });
  }
}

/** The key's own spending budget for its period (not the account's balance) has too little left. */
export class BudgetExceededError extends DomainError {
  readonly status = 402;
  readonly type = 'budget_exceeded';
  constructor(b: {
    keyId: string;
    requiredCredits: number;
    availableCredits: number;
    budgetCredits: number;
    period: string;
  }) {
    const per = b.period === 'none' ? 'in total' : `this ${b.period} (UTC)`;
    super(
      `Key budget exceeded: ${b.requiredCredits} required, ${b.availableCredits} available of the key's ${b.budgetCredits} credits ${per}; nothing was charged.`,
      {
        required: b.requiredCredits,
        available: b.availableCredits,
        key_id: b.keyId,
        max_credits: b.budgetCredits,
        period: b.period,
      },
    );
  }
}

/** The budget the account gives one of its customers (the platform's own end user) has too little left this period. */
export class CustomerBudgetExceededError extends DomainError {
  readonly status = 402;
  readonly type = 'customer_budget_exceeded';
  constructor(b: {
    customer: string;
    requiredCredits: number;
    availableCredits: number;
    budgetCredits: number;
    period: string;
  }) {
    const per = b.period === 'none' ? 'in total' : `this ${b.period} (UTC)`;
    super(
      `Customer budget exceeded for '${b.customer}': ${b.requiredCredits} required, ${b.availableCredits} available of the customer's ${b.budgetCredits} credits ${per}; nothing was charged.`,
      {
        param: 'customer',
        customer: b.customer,
        required: b.requiredCredits,
        available: b.availableCredits,
        max_credits: b.budgetCredits,
        period: b.period,
      },
    );
  }
}

/** A request's own `max_credits` is below what it would cost: refused before anything is held. */
export class QuoteAboveSpendCapError extends DomainError {
  readonly status = 402;
  readonly type = 'max_credits_exceeded';
  constructor(quoteCredits: number, capCredits: number, param: string) {
    super(
      `The quote of ${quoteCredits} credits is above this request's ${param} of ${capCredits}; nothing was held or charged.`,
      {
        param,
        required: quoteCredits,
        max_credits: capCredits,
      },
    );
  }
}

export class PermissionError extends DomainError {
  readonly status = 403;
  readonly type = 'permission_error';
}

/** A dashboard session's state-changing call without its CSRF token, or from a page of another origin. */
export class CsrfError extends DomainError {
  readonly status = 403;
  readonly type = 'csrf_error';
}

export class NotFoundError extends DomainError {
  readonly status = 404;
  readonly type = 'not_found';
}

/** A path that exists, asked with a method none of its routes takes (RFC 9110): `allowed` is its `Allow`. */
export class MethodNotAllowedError extends DomainError {
  readonly status = 405;
  readonly type = 'invalid_request_error';
  constructor(
    method: string,
    path: string,
    readonly allowed: readonly string[],
  ) {
    super(`${method} is not allowed on ${path}; use ${allowed.join(' or ')}.`);
  }
}

export class IdempotencyConflictError extends DomainError {
  readonly status = 409;
  readonly type = 'idempotency_conflict';
  constructor() {
    super('This Idempotency-Key was already used with a different request; use a new key for a new request.', {
      param: 'Idempotency-Key',
    });
  }
}

export class RateLimitError extends DomainError {
  readonly status = 429;
  readonly type = 'rate_limit_error';
  readonly retryAfterSeconds: number;
  constructor(limit: number, retryAfterSeconds: number) {
    super(`Rate limit of ${limit} requests per minute exceeded; retry after ${retryAfterSeconds} s.`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** An email that already belongs to a user of another account (emails are unique across accounts). */
export class EmailTakenError extends DomainError {
  readonly status = 409;
  readonly type = 'email_taken';
  constructor() {
    super('This email already belongs to a user of another account.', { param: 'email' });
  }
}

/** A change that would leave the account without an owner (removing or demoting the last one). */
export class LastOwnerError extends DomainError {
  readonly status = 409;
  readonly type = 'last_owner';
  constructor() {
    super('The account must keep at least one owner: make another member an owner first.');
  }
}

/** An invitation for someone who is already a member of this account. */
export class MemberExistsError extends DomainError {
  readonly status = 409;
  readonly type = 'member_exists';
  constructor(email: string) {
    super(`${email} is already a member of this account; change their role instead.`, { param: 'email' });
  }
}

/** A request that needs a queued or running generation met a finished one. */
export class GenerationFinishedError extends DomainError {
  readonly status = 409;
  readonly type = 'generation_finished';
  constructor(id: string, state: string) {
    super(`Generation '${id}' has already ${state}; only a queued or running generation can be cancelled.`, {
      status: state,
    });
  }
}

/** A batch still running cannot be deleted: it is cancelled first. */
export class BatchNotEndedError extends DomainError {
  readonly status = 409;
  readonly type = 'batch_not_ended';
  constructor(id: string, state: string) {
    super(
      `Batch '${id}' is ${state.replace('_', ' ')}; only a batch that has ended can be deleted (cancel it first).`,
      {
        status: state,
      },
    );
  }
}

/** A batch that has already ended (completed, failed or expired) cannot be cancelled. */
export class BatchFinishedError extends DomainError {
  readonly status = 409;
  readonly type = 'batch_finished';
  constructor(id: string, state: string) {
    super(
      `Batch '${id}' has already ${state === 'failed' ? 'failed' : state}; only a batch in progress can be cancelled.`,
      {
        status: state,
      },
    );
  }
}

/** A request that needs a succeeded generation (a remix, extension or edit of a video) met one that has not succeeded. */
export class GenerationNotSucceededError extends DomainError {
  readonly status = 409;
  readonly type = 'generation_not_succeeded';
  constructor(id: string, state: string, action: 'remixed' | 'extended' | 'edited' = 'remixed') {
    super(`Generation '${id}' is ${state}; only a succeeded video can be ${action}.`, { status: state });
  }
}

/**
 * A reply the API is streaming to its client: what was sent is charged when the stream ends, so a
 * cancel from elsewhere, which releases the hold, would hand the reply over for free.
 */
export class GenerationStreamingError extends DomainError {
  readonly status = 409;
  readonly type = 'generation_streaming';
  constructor(id: string) {
    super(
      `Generation '${id}' is a reply being streamed to its client and cannot be cancelled from here; closing that connection stops it, charged only for the tokens sent.`,
      { status: 'running' },
    );
  }
}

/** A generation still queued or running cannot be deleted: it has files and a charge still to come. */
export class GenerationUnfinishedError extends DomainError {
  readonly status = 409;
  readonly type = 'generation_unfinished';
  constructor(id: string, state: string) {
    super(
      `Generation '${id}' is ${state}; it can be deleted once it has completed or failed (cancel it first to stop it).`,
      { status: state },
    );
  }
}

/** A webhook endpoint that is disabled cannot be sent to until it is enabled again. */
export class WebhookDisabledError extends DomainError {
  readonly status = 409;
  readonly type = 'endpoint_disabled';
  constructor(id: string, reason: string | null) {
    super(
      `Webhook endpoint '${id}' is disabled${reason ? ` (${reason})` : ''}; enable it first (PATCH with enabled: true).`,
    );
  }
}

/** The service could not do it now; nothing was charged, and the client may retry. */
export class ServiceUnavailableError extends DomainError {
  readonly status = 503;
  readonly type = 'server_error';
  readonly retryAfterSeconds = 1;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message);
    // The cause is for logs only: error bodies never show internals.
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** A provider refused or failed the job for good: not retried, the generation fails. */
export class ProviderRejectedError extends Error {
  override readonly name = 'ProviderRejectedError';
  constructor(
    message: string,
    readonly code = 'provider_error',
  ) {
    super(message);
  }
}

/**
 * The client's own deadline (`Cancel-After`, `deadline_seconds`) passed before a reply it is
 * streamed itself was complete: before the first token nothing was charged; after it, the tokens
 * sent were, as when the client goes away.
 */
export class DeadlineExceededError extends DomainError {
  readonly status = 504;
  readonly type = 'server_error';
}

/** The model provider failed the run (after retries) or refused it for a reason of its own; nothing was charged. */
export class ProviderFailedError extends DomainError {
  readonly status = 502;
  readonly type = 'server_error';
}

const AFTER_ADMISSION = Symbol('afterAdmission');

/**
 * Marks a failure that happened after a generation was admitted (its hold placed). Such an answer
 * tells clients not to resend the request (`x-should-retry: false`): an SDK that retries 5xx
 * would otherwise admit, and hold, a second generation.
 */
export function markAfterAdmission<E>(err: E): E {
  if (typeof err === 'object' && err !== null) Object.defineProperty(err, AFTER_ADMISSION, { value: true });
  return err;
}

export function isAfterAdmission(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[AFTER_ADMISSION] === true;
}
