// Spans around outbound work (a provider call, a webhook attempt, a ledger transaction) when
// tracing is on. core/ knows no tracer: the runtime installs one (runtime/tracing.ts) only when
// OTEL_EXPORTER_OTLP_ENDPOINT is set, so with tracing off a call here costs one test of a variable
// and loads nothing.

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** What work inside a span may add to it once it knows (an outcome); does nothing with tracing off. */
export interface OpenSpan {
  set(key: string, value: string | number | boolean): void;
}

export interface SpanRunner {
  /**
   * Runs `work` inside a span named `name` (a child of the current one), ended when it settles.
   * `follows`: a W3C traceparent the span is linked to (a link, not its parent).
   */
  run<T>(name: string, attributes: SpanAttributes, work: (span: OpenSpan) => Promise<T>, follows?: string): Promise<T>;
  /** The same around a stream: the span lasts from its first read to its end, error or abandonment. */
  stream<T>(name: string, attributes: SpanAttributes, open: () => AsyncIterable<T>): AsyncIterable<T>;
  /** The W3C traceparent of the active span; undefined outside any span. */
  traceparent(): string | undefined;
}

let runner: SpanRunner | undefined;

const NO_SPAN: OpenSpan = { set: () => undefined };

/** Set once by the runtime when tracing starts; undefined again when it stops. */
export function installSpanRunner(next: SpanRunner | undefined): void {
  runner = next;
}

export function inSpan<T>(name: string, attributes: SpanAttributes, work: (span: OpenSpan) => Promise<T>): Promise<T> {
  return runner ? runner.run(name, attributes, work) : work(NO_SPAN);
}

/** inSpan, its span also linked to the one `follows` names (work it carries on, in a trace of its own). */
export function inSpanFollowing<T>(
  name: string,
  attributes: SpanAttributes,
  follows: string | null,
  work: (span: OpenSpan) => Promise<T>,
): Promise<T> {
  return runner ? runner.run(name, attributes, work, follows ?? undefined) : work(NO_SPAN);
}

export function streamInSpan<T>(
  name: string,
  attributes: SpanAttributes,
  open: () => AsyncIterable<T>,
): AsyncIterable<T> {
  return runner ? runner.stream(name, attributes, open) : open();
}

/**
 * The W3C traceparent of the span active now, kept with work that another trace carries on later
 * (a webhook delivery written to the outbox); null with tracing off or outside any span.
 */
export function activeTraceparent(): string | null {
  return runner?.traceparent() ?? null;
}
