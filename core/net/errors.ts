/**
 * Failures of an outbound request, one class each, so a caller maps them without reading
 * messages: a refused URL or address is the client's mistake (400, never retried), a timeout or
 * a lost connection may pass (retried). The class name doubles as the Temporal failure type.
 */
export abstract class OutboundRequestError extends Error {
  /** Whether trying the same request later may succeed. */
  abstract readonly retryable: boolean;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Not an http(s) URL, carries credentials, or does not parse. */
export class UnsafeUrlError extends OutboundRequestError {
  readonly retryable = false;
}

/**
 * The destination is an address this service does not connect to. The message names the kind
 * of address only: echoing the resolved IP would let a caller map internal DNS.
 */
export class UnsafeAddressError extends OutboundRequestError {
  readonly retryable = false;
  constructor(
    readonly addressClass: string,
    description: string,
  ) {
    super(`Refused to connect: the destination is ${description}.`);
  }
}

export class ResponseTooLargeError extends OutboundRequestError {
  readonly retryable = false;
  constructor(readonly maxBytes: number) {
    super(`The response is larger than the limit of ${maxBytes} bytes.`);
  }
}

/** The whole exchange (DNS, connect, every redirect, the body) took longer than allowed. */
export class FetchTimeoutError extends OutboundRequestError {
  readonly retryable = true;
  constructor(readonly timeoutMs: number) {
    super(`The request did not complete within ${timeoutMs} ms.`);
  }
}

export class TooManyRedirectsError extends OutboundRequestError {
  readonly retryable = false;
  constructor(readonly maxRedirects: number) {
    super(`The request was redirected more than ${maxRedirects} times.`);
  }
}

/** DNS failure, refused or reset connection, TLS failure, a body cut short. */
export class OutboundNetworkError extends OutboundRequestError {
  readonly retryable = true;
}
