// Spans around outbound work (a provider call, a webhook attempt) when tracing is on. core/ knows
// no tracer: the runtime installs one (runtime/tracing.ts) only when OTEL_EXPORTER_OTLP_ENDPOINT is
// set, so with tracing off a call here costs one test of a variable and loads nothing.

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanRunner {
  /** Runs `work` inside a span named `name` (a child of the current one), ended when it settles. */
  run<T>(name: string, attributes: SpanAttributes, work: () => Promise<T>): Promise<T>;
  /** The same around a stream: the span lasts from its first read to its end, error or abandonment. */
  stream<T>(name: string, attributes: SpanAttributes, open: () => AsyncIterable<T>): AsyncIterable<T>;
}

let runner: SpanRunner | undefined;

/** Set once by the runtime when tracing starts; undefined again when it stops. */
export function installSpanRunner(next: SpanRunner | undefined): void {
  runner = next;
}

export function inSpan<T>(name: string, attributes: SpanAttributes, work: () => Promise<T>): Promise<T> {
  return runner ? runner.run(name, attributes, work) : work();
}

export function streamInSpan<T>(name: string, attributes: SpanAttributes, open: () => AsyncIterable<T>): AsyncIterable<T> {
  return runner ? runner.stream(name, attributes, open) : open();
}
