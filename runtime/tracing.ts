// Tracing (OpenTelemetry), on when OTEL_EXPORTER_OTLP_ENDPOINT is set: one trace per generation,
// from the API's HTTP span through the workflow start (Temporal client), the workflow and its
// activities (Temporal's interceptors carry the context in headers), to the ledger's transactions
// and the provider calls (core/tracing.ts); a webhook attempt is linked to the span that wrote its
// event to the outbox. runtime/services.ts imports this module only when tracing
// is on: off, no SDK starts, no interceptor is registered and none of this is loaded.
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, Link, Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ClientInterceptors } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestTracing } from '../api/app';
import type { TracingSettings } from '../core/config';
import { installSpanRunner } from '../core/tracing';
import type { SpanRunner } from '../core/tracing';

/** What a worker adds to its options: the activity interceptors, and the sink workflow spans leave the sandbox by. */
export interface WorkerTracing {
  interceptors: Pick<NonNullable<WorkerOptions['interceptors']>, 'activity'>;
  sinks: NonNullable<WorkerOptions['sinks']>;
  /** Bundled with the workflows: a prebuilt bundle ignores WorkerOptions.interceptors.workflowModules. */
  workflowModules: string[];
}

export interface Tracing {
  client: ClientInterceptors;
  worker: WorkerTracing;
  http: RequestTracing;
  /** Sends what is buffered, then stops (the last spans of a stopping process are kept). */
  shutdown(): Promise<void>;
}

/** The Temporal interceptors' workflow side, loaded inside the workflow sandbox. */
export const WORKFLOW_INTERCEPTORS = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

/** Starts the SDK (process-wide: the context manager, the propagator, the tracer provider). */
export function startTracing(settings: TracingSettings): Tracing {
  const resource = new Resource({ 'service.name': settings.serviceName });
  // Batched: a span costs the request an enqueue, never a round trip to the collector. A collector
  // that does not answer holds up a stopping process's last flush for at most the timeout.
  const exporter = new OTLPTraceExporter({ url: settings.tracesUrl, timeoutMillis: 1_500 });
  const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000, exportTimeoutMillis: 1_500 });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  provider.register({
    contextManager: new AsyncLocalStorageContextManager(),
    propagator: new W3CTraceContextPropagator(),
  });
  const tracer = trace.getTracer('gensvc');
  installSpanRunner(spanRunner(tracer));
  return {
    client: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
    worker: {
      interceptors: {
        activity: [
          (ctx) => ({
            inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
            outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
          }),
        ],
      },
      sinks: { exporter: makeWorkflowExporter(processor, resource) },
      workflowModules: [WORKFLOW_INTERCEPTORS],
    },
    http: requestTracing(tracer),
    async shutdown() {
      installSpanRunner(undefined);
      await provider.shutdown();
    },
  };
}

type Tracer = ReturnType<typeof trace.getTracer>;

function spanRunner(tracer: Tracer): SpanRunner {
  const failed = (span: Span, err: unknown) => {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
  };
  return {
    run: (name, attributes, work, follows) =>
      tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes, links: linkTo(follows) }, async (span) => {
        try {
          return await work({ set: (key, value) => span.setAttribute(key, value) });
        } catch (err) {
          failed(span, err);
          throw err;
        } finally {
          span.end();
        }
      }),
    async *stream(name, attributes, open) {
      const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes });
      try {
        yield* open();
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
    traceparent() {
      const carrier: { traceparent?: string } = {};
      propagation.inject(context.active(), carrier);
      return carrier.traceparent;
    },
  };
}

/** The link to a stored traceparent; none when it is absent or not one (the propagator checks it). */
function linkTo(traceparent: string | undefined): Link[] {
  if (traceparent === undefined) return [];
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return linked ? [{ context: linked }] : [];
}

/** Polled every few seconds by balancers and Prometheus: a trace each would bury the ones that matter. */
const UNTRACED_PATHS = new Set(['/health', '/metrics']);

/**
 * A server span per request (but UNTRACED_PATHS). It begins with the request's logger (Fastify makes that first, before
 * it logs "incoming request"), so every line about the request carries `trace_id` and `span_id`;
 * the request then runs inside it, and it ends when the response is done or the client went away.
 * A caller's own `traceparent` makes it a child of the caller's trace.
 */
function requestTracing(tracer: Tracer): RequestTracing {
  const spans = new WeakMap<IncomingMessage, { span: Span; ctx: Context }>();
  const begin = (raw: IncomingMessage) => {
    // The path only: a query string may carry a secret (a signed file link's signature).
    const path = (raw.url ?? '').split('?')[0]!;
    if (UNTRACED_PATHS.has(path)) return undefined;
    const parent = propagation.extract(ROOT_CONTEXT, raw.headers);
    const span = tracer.startSpan(
      raw.method ?? 'HTTP',
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': raw.method ?? '', 'url.path': path },
      },
      parent,
    );
    const began = { span, ctx: trace.setSpan(parent, span) };
    spans.set(raw, began);
    return began;
  };
  return {
    childLoggerFactory(logger: FastifyBaseLogger, bindings, opts, raw) {
      const span = (spans.get(raw) ?? begin(raw))?.span;
      if (!span) return logger.child(bindings, opts);
      const { traceId, spanId } = span.spanContext();
      return logger.child({ ...bindings, trace_id: traceId, span_id: spanId }, opts);
    },
    onRequest(request: FastifyRequest, reply: FastifyReply, done: () => void) {
      const began = spans.get(request.raw) ?? begin(request.raw);
      if (!began) {
        done();
        return;
      }
      const { span, ctx } = began;
      // The body arrives by events of the request stream, outside any context: bound, its
      // listeners (and so the handler) run inside the span.
      context.bind(ctx, request.raw);
      context.bind(ctx, reply.raw);
      reply.raw.once('close', () => {
        const route = request.routeOptions.url;
        if (route) {
          span.updateName(`${request.method} ${route}`);
          span.setAttribute('http.route', route);
        }
        span.setAttribute('http.response.status_code', reply.raw.statusCode);
        if (reply.raw.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        if (!reply.raw.writableFinished) span.setAttribute('http.request.aborted', true);
        span.end();
      });
      context.with(ctx, done);
    },
  };
}
