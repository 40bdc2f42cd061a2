import { randomUUID } from 'node:crypto';
import type { UpstreamConfig } from '../config/upstreams';
import { ProviderRejectedError } from '../errors';
import type { SafeHttpClient } from '../net/safe-http';
import type { RouteEntry } from '../vocabulary';
import type { RouteLog, UpstreamHealth } from '../db/upstreams';
import { costOf, orderRoutes, routeTable } from './route-table';
import type { Route } from './route-table';
import type {
  ChatStreamEvent,
  Provider,
  ProviderContext,
  ProviderFeature,
  ProviderJob,
  ProviderResult,
  UpstreamWait,
} from './types';
import { UpstreamUnavailableError } from './upstream-http';
import { inSpan, streamInSpan } from '../tracing';

export interface RouterOptions {
  /** The circuit breaker; it only decides between alternatives (a model with one upstream always asks it). */
  health?: UpstreamHealth;
  /** Where each generation's upstreams are recorded. */
  log?: RouteLog;
  /** For the weighted draw among equal priorities. */
  random?: () => number;
  /** The router's own trouble (the breaker's or the record's store failing): the run goes on. */
  warn?: (message: string, err: unknown) => void;
  /** The public origin upstreams send their callbacks to (none: they are not asked to). */
  callbackBaseUrl?: string | undefined;
}

/** What the router reports with a heartbeat, so that a retried attempt resumes the same upstream's job. */
interface Pinned {
  upstream: string;
  details: unknown;
  /** A job left waiting (detached) whose upstream is already in the record's `tried`. */
  waited?: true;
}

/**
 * The provider of each model: its configured upstreams (UPSTREAMS_JSON / UPSTREAMS_FILE), else
 * `fallback` (the simulator). The API (streamed chat) and the worker (every other run) both use it.
 * `http` fetches the files upstreams hand back by URL, SSRF-safely (see upstream-http.ts).
 *
 * Several upstreams of one model are asked in priority order, a weighted draw among equals. An
 * upstream failing on its side (UpstreamUnavailableError: 5xx, 429, a timeout, a refused
 * connection) before it produced anything passes the same call on to the next one: the run is
 * still the one admitted, so nothing is held or charged twice. Produced means it reported
 * something: a job id (a queued video, now paid for there) or a token; from then on a failure
 * stays with that upstream, and a retried attempt resumes it. A refusal about the request
 * (ProviderRejectedError) is final on every upstream, so none other is asked.
 */
export function createProviderRouter(
  upstreams: readonly UpstreamConfig[],
  fallback: Provider,
  http: SafeHttpClient,
  options: RouterOptions = {},
): Provider {
  const { byModel, byName } = routeTable(upstreams, http, options.callbackBaseUrl);
  const random = options.random ?? Math.random;
  const routing: Routing = {
    byModel,
    fallback,
    ordered: (routes, pinned) => orderRoutes(routes, random, pinned),
    ...routingHooks(options),
  };

  /** Every upstream a model may fall back to must take the feature, or a fallback would drop it. */
  const serves = (model: string, feature: ProviderFeature): boolean => {
    const routes = byModel.get(model);
    return routes
      ? routes.every((r) => r.provider.serves?.(model, feature) ?? false)
      : (fallback.serves?.(model, feature) ?? false);
  };

  /** The waiting job's own upstream, with the details it reported (unwrapped from the pin). */
  const waitingAt = (wait: UpstreamWait): [Provider, UpstreamWait] | undefined => {
    const pinned = pinnedOf(wait.resume);
    const provider = pinned && byName.get(pinned.upstream);
    return provider && pinned ? [provider, { ...wait, resume: pinned.details }] : undefined;
  };
  const checkJob = async (wait: UpstreamWait, signal: AbortSignal): Promise<boolean> => {
    const at = waitingAt(wait);
    // An upstream no longer configured cannot be asked: the run that collects it says what is wrong.
    return at?.[0].checkJob ? at[0].checkJob(at[1], signal) : true;
  };
  const cancelJob = async (wait: UpstreamWait): Promise<void> => {
    const at = waitingAt(wait);
    await at?.[0].cancelJob?.(at[1]);
  };

  return {
    run: (job, ctx) => runRouted(routing, job, ctx),
    streamChat: (job, signal, routed) => streamRouted(routing, job, signal, routed),
    serves,
    checkJob,
    cancelJob,
  };
}

/** What a routed call needs: the routes of each model, the simulator for the others, and the hooks around each upstream asked. */
interface Routing extends ReturnType<typeof routingHooks> {
  byModel: ReadonlyMap<string, Route[]>;
  fallback: Provider;
  ordered: (routes: readonly Route[], pinned?: string) => Route[];
}

/** The breaker's and the record's hooks around each upstream asked. */
function routingHooks(options: RouterOptions) {
  const warn = options.warn ?? (() => undefined);

  // The breaker's store failing must not fail a run: it is then as if every upstream were healthy.
  const guarded = async <T>(what: string, work: () => Promise<T>, otherwise: T): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      warn(`upstream routing: ${what} failed`, err);
      return otherwise;
    }
  };
  const admit = (routes: readonly Route[], r: Route): Promise<boolean> =>
    routes.length > 1 && options.health
      ? guarded('the breaker read', () => options.health!.admit(r.upstream), true)
      : Promise.resolve(true);
  const judge = async (routes: readonly Route[], r: Route, err: unknown): Promise<void> => {
    const health = options.health;
    if (routes.length < 2 || !health) return;
    if (err === undefined || err instanceof ProviderRejectedError)
      await guarded('the breaker write', () => health.answered(r.upstream), undefined);
    else if (err instanceof UpstreamUnavailableError)
      await guarded('the breaker write', () => health.failed(r.upstream), undefined);
  };
  const record = (job: ProviderJob, entry: RouteEntry): Promise<void> =>
    options.log
      ? guarded('recording the upstreams', () => options.log!.record(job.generationId, entry), undefined)
      : Promise.resolve();
  return { admit, judge, record };
}

/** What a call that found no upstream to answer throws: the last upstream's failure, or why none was asked. */
const exhausted = (job: ProviderJob, tried: readonly string[], last: unknown): unknown =>
  last ??
  new UpstreamUnavailableError(
    tried.length === 0 ? `Every upstream of ${job.model} is cooling down.` : `No upstream of ${job.model} answered.`,
  );

/** One run, asked of the model's upstreams in turn until one takes it (see createProviderRouter). */
async function runRouted(routing: Routing, job: ProviderJob, ctx: ProviderContext): Promise<ProviderResult> {
  const { byModel, fallback, ordered, admit, judge, record } = routing;
  const routes = byModel.get(job.model);
  if (!routes) return inSpan(...providerSpan(job, 'simulator'), () => fallback.run(job, ctx));
  const pinned = pinnedOf(ctx.resume);
  // Details an attempt reported before routes were named (one upstream per model): that upstream's job.
  let unnamed = pinned === undefined ? ctx.resume : undefined;
  const call = randomUUID();
  const tried: string[] = [];
  let last: unknown;
  for (const route of ordered(routes, pinned?.upstream)) {
    const resume = pinned?.upstream === route.upstream ? pinned.details : unnamed;
    unnamed = undefined;
    // A job already under way there is resumed whatever the breaker says: it is paid for.
    if (resume === undefined && !(await admit(routes, route))) continue;
    // Collecting a job left waiting asks no upstream anew: the submit already counted it.
    if (!(pinned?.waited && pinned.upstream === route.upstream)) tried.push(route.upstream);
    let reported = false;
    const here: ProviderContext = {
      ...ctx,
      heartbeat: (details?: unknown) => {
        reported = true;
        ctx.heartbeat(details === undefined ? undefined : ({ upstream: route.upstream, details } satisfies Pinned));
      },
      ...(resume === undefined ? { resume: undefined } : { resume }),
    };
    try {
      const result = await inSpan(...providerSpan(job, route.upstream), () => route.provider.run(job, here));
      await judge(routes, route, undefined);
      if (result.waiting) {
        // Served once it is collected: a run resuming this job (pinned here) records that.
        const entry = { call, tried };
        await record(job, entry);
        return {
          waiting: {
            ...result.waiting,
            upstream: route.upstream,
            resume: { upstream: route.upstream, details: result.waiting.resume, waited: true } satisfies Pinned,
          },
          route: entry,
        };
      }
      // The record written here may be lost to a database outage: the entry goes with the
      // result too, and the settle writes it again with the charge.
      const entry = { call, tried, servedBy: route.upstream, costEur: costOf(route, job, result.outputTokens) };
      await record(job, entry);
      return { ...result, upstream: route.upstream, route: entry };
    } catch (err) {
      await judge(routes, route, err);
      if (reported || ctx.signal.aborted || !(err instanceof UpstreamUnavailableError)) {
        await record(job, { call, tried });
        throw err;
      }
      last = err;
    }
  }
  await record(job, { call, tried });
  throw exhausted(job, tried, last);
}

/** One streamed chat, asked of the model's upstreams in turn until one produces a token. */
async function* streamRouted(
  routing: Routing,
  job: ProviderJob,
  signal: AbortSignal,
  routed?: (entry: RouteEntry) => void,
): AsyncGenerator<ChatStreamEvent> {
  const { byModel, fallback, ordered, admit, judge, record } = routing;
  const routes = byModel.get(job.model);
  if (!routes) {
    yield* streamInSpan(...providerSpan(job, 'simulator'), () => fallback.streamChat(job, signal));
    return;
  }
  const call = randomUUID();
  const tried: string[] = [];
  let last: unknown;
  // The caller gets the entry before the best-effort write, to settle it durably with the charge.
  const recordRoute = (entry: RouteEntry): Promise<void> => {
    routed?.(entry);
    return record(job, entry);
  };
  for (const route of ordered(routes)) {
    if (!(await admit(routes, route))) continue;
    tried.push(route.upstream);
    let deltas = 0;
    let usage: number | undefined;
    let produced = false;
    let failed: unknown;
    try {
      for await (const event of streamInSpan(...providerSpan(job, route.upstream), () =>
        route.provider.streamChat(job, signal),
      )) {
        if (!produced) {
          produced = true;
          await judge(routes, route, undefined);
        }
        if (event.type === 'usage') usage = event.outputTokens;
        else deltas++;
        yield event;
      }
      return;
    } catch (err) {
      failed = err;
      if (!produced) await judge(routes, route, err);
      // After its first token a reply stays with its upstream: the client has part of it.
      if (produced || signal.aborted || !(err instanceof UpstreamUnavailableError)) throw err;
      last = err;
    } finally {
      // Complete, cut short by the consumer, or failed after its first token: this one served it.
      if (produced || failed === undefined || !(failed instanceof UpstreamUnavailableError) || signal.aborted) {
        await recordRoute(
          produced
            ? { call, tried, servedBy: route.upstream, costEur: costOf(route, job, usage ?? deltas) }
            : { call, tried },
        );
      }
    }
  }
  await recordRoute({ call, tried });
  throw exhausted(job, tried, last);
}

/** A span per call of an upstream (each one a fallback asks, too) or of the simulator. */
function providerSpan(job: ProviderJob, upstream: string): [string, Record<string, string>] {
  return [
    `provider ${upstream}`,
    {
      'gensvc.upstream': upstream,
      'gensvc.model': job.model,
      'gensvc.kind': job.kind,
      'gensvc.generation_id': job.generationId,
    },
  ];
}

function pinnedOf(resume: unknown): Pinned | undefined {
  const r = resume as Partial<Pinned> | undefined;
  return typeof r?.upstream === 'string' && r.details !== undefined ? (r as Pinned) : undefined;
}
