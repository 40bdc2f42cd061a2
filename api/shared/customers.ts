import { InvalidRequestError } from '../../core/errors';
import { safeText } from '../../core/text';

/**
 * The platform's own end user a generation is for, as the platform names it: a `customer` field
 * (groups A and C, the MCP tools), OpenAI's `user` or `safety_identifier` (group B), or the
 * `X-Customer-Id` header on any of them. One name inside the service: stored with the generation,
 * shown back, and held against the customer's budget and rate limit.
 */
export const MAX_CUSTOMER_ID_CHARS = 256;
export const customerId = (name: string) =>
  safeText({ min: 1, max: MAX_CUSTOMER_ID_CHARS, label: name }).describe(
    `Your own id for your end user this is for (1 to ${MAX_CUSTOMER_ID_CHARS} characters): stored with the generation, reported per customer, and held against the customer’s budget and rate limit`,
  );
export const CUSTOMER_HEADER = 'x-customer-id';
/** The `X-Customer-Id` header of every generate endpoint. */
export const customerHeaders = {
  [CUSTOMER_HEADER]: customerId('X-Customer-Id')
    .optional()
    .describe('Your own id for your end user this is for; the same as the body’s customer field'),
};

/**
 * The one customer a request names, from its `X-Customer-Id` header and the body fields that may
 * carry one (`{ customer }`, or group B's `{ user, safety_identifier }`): any of them, and two that
 * differ are refused, naming the second. Undefined when none is given (group B's empty `user` is none).
 */
export function customerOf(
  header: string | undefined,
  fields: Record<string, string | null | undefined>,
): string | undefined {
  let found: { name: string; value: string } | undefined =
    header === undefined ? undefined : { name: 'X-Customer-Id', value: header };
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null || value === '') continue;
    if (found && found.value !== value)
      throw new InvalidRequestError(
        `${name}: names another customer than ${found.name} ('${value}' and '${found.value}'); send one, or the same in both.`,
        name,
      );
    found ??= { name, value };
  }
  return found?.value;
}

/**
 * The service options of a request's customer. What an Idempotency-Key stands for includes a
 * customer named by the header (one in the body is in the body already): the same key for another
 * customer is a conflict, never the first customer's generation.
 */
export function customerOption(
  headers: { [CUSTOMER_HEADER]?: string | undefined },
  fields: Record<string, string | null | undefined>,
) {
  const customer = customerOf(headers[CUSTOMER_HEADER], fields);
  return customer === undefined ? {} : { customer };
}

/** The body an Idempotency-Key stands for: the body, and the customer when the header named it. */
export const keyedBody = (headers: { [CUSTOMER_HEADER]?: string | undefined }, body: unknown): unknown =>
  headers[CUSTOMER_HEADER] === undefined ? body : { body, [CUSTOMER_HEADER]: headers[CUSTOMER_HEADER] };

/**
 * OpenAI's ids for the end user a request is for (`user`, `safety_identifier`): the customer it is
 * for, like X-Customer-Id. An empty one names nobody (OpenAI accepts it).
 */
export const openAiEndUser = () =>
  safeText({ max: MAX_CUSTOMER_ID_CHARS }).describe(
    'Your own id for your end user this is for: the customer stored with the generation and held against its budget and rate limit (as X-Customer-Id); empty: none',
  );
