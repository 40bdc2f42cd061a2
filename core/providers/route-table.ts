import type { UpstreamConfig } from '../config/upstreams';
import type { SafeHttpClient } from '../net/safe-http';
import { createAnthropicUpstream } from './anthropic-upstream';
import { createOpenAiUpstream } from './openai-upstream';
import { createQueueVideoUpstream } from './queue-video-upstream';
import type { VideoDerivationPaths } from './queue-video-upstream';
import { createReplicateUpstream } from './replicate-upstream';
import type { Provider, ProviderJob } from './types';

/** One upstream able to run a catalogue model. */
export interface Route {
  upstream: string;
  provider: Provider;
  /** Lower first. */
  priority: number;
  weight: number;
  costEur: number | undefined;
}

/** The configured upstreams, each made once: the routes of each model, and each upstream by name. */
export interface RouteTable {
  byModel: Map<string, Route[]>;
  byName: Map<string, Provider>;
}

/** A queue-video upstream's paths for extending and editing each model's videos, where configured. */
function derivationsOf(
  entries: readonly (readonly [string, { extend?: string; edit?: string }])[],
): VideoDerivationPaths {
  const paths = (how: 'extend' | 'edit') =>
    Object.fromEntries(entries.flatMap(([model, e]) => (e[how] ? [[model, e[how]] as const] : [])));
  return { extend: paths('extend'), edit: paths('edit') };
}

/** Where an upstream calls back (api/upstream-callbacks/routes.ts); the query says whose keys verify it. */
export function callbackUrl(baseUrl: string, protocol: 'queue-video' | 'replicate', upstream: string): string {
  const door = protocol === 'queue-video' ? 'fal' : 'replicate';
  return `${baseUrl.replace(/\/+$/, '')}/providers/${door}/webhook?upstream=${encodeURIComponent(upstream)}`;
}

/** Makes each configured upstream and lists, per model, the routes to it (`callbackBaseUrl`: where upstreams call back, if anywhere). */
export function routeTable(
  upstreams: readonly UpstreamConfig[],
  http: SafeHttpClient,
  callbackBaseUrl: string | undefined,
): RouteTable {
  const byModel = new Map<string, Route[]>();
  const byName = new Map<string, Provider>();
  upstreams.forEach((u, index) => {
    const entries = Object.entries(u.models).map(
      ([model, e]) => [model, typeof e === 'string' ? { model: e, weight: 1 } : e] as const,
    );
    const auth = u.auth ?? (u.protocol === 'queue-video' ? 'key' : u.protocol === 'anthropic' ? 'x-api-key' : 'bearer');
    const scheme = auth === 'key' ? 'Key' : 'Bearer';
    const endpoint = {
      name: u.name,
      baseUrl: u.baseUrl,
      authorization: u.apiKey && auth !== 'x-api-key' ? `${scheme} ${u.apiKey}` : undefined,
      headers: u.apiKey && auth === 'x-api-key' ? { 'x-api-key': u.apiKey } : undefined,
      timeoutMs: u.timeoutMs,
      models: Object.fromEntries(entries.map(([model, e]) => [model, e.model])),
    };
    // Replicate's webhooks are asked for only when their secret is known: unverifiable ones are useless.
    const webhookUrl =
      callbackBaseUrl && (u.protocol === 'queue-video' || (u.protocol === 'replicate' && u.webhookSecret))
        ? callbackUrl(callbackBaseUrl, u.protocol, u.name)
        : undefined;
    const waits = { pollMs: u.pollMs, slowPollMs: u.slowPollMs, webhookUrl };
    const provider =
      u.protocol === 'openai'
        ? createOpenAiUpstream(endpoint, http)
        : u.protocol === 'anthropic'
          ? createAnthropicUpstream(endpoint)
          : u.protocol === 'replicate'
            ? createReplicateUpstream({ ...endpoint, ...waits }, http)
            : createQueueVideoUpstream({ ...endpoint, ...waits, derivations: derivationsOf(entries) }, http);
    byName.set(u.name, provider);
    for (const [model, e] of entries) {
      const routes = byModel.get(model) ?? [];
      routes.push({
        upstream: u.name,
        provider,
        priority: e.priority ?? index,
        weight: e.weight,
        costEur: 'costEur' in e ? e.costEur : undefined,
      });
      byModel.set(model, routes);
    }
  });
  return { byModel, byName };
}

/** Priority order; among equal priorities a draw weighted by `weight`, so load is shared. `pinned` goes first. */
export function orderRoutes(routes: readonly Route[], random: () => number, pinned?: string): Route[] {
  const byPriority = new Map<number, Route[]>();
  for (const r of routes) byPriority.set(r.priority, [...(byPriority.get(r.priority) ?? []), r]);
  const out: Route[] = [];
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    const pool = [...byPriority.get(priority)!];
    while (pool.length > 0) {
      let x = random() * pool.reduce((sum, r) => sum + r.weight, 0);
      const i = Math.max(
        0,
        pool.findIndex((r) => (x -= r.weight) < 0),
      );
      out.push(...pool.splice(i, 1));
    }
  }
  const first = out.findIndex((r) => r.upstream === pinned);
  if (first > 0) out.unshift(...out.splice(first, 1));
  return out;
}

/** What a run costs us at an upstream: per image, per second of video, per 1,000 output tokens. */
export function costOf(route: Route, job: ProviderJob, outputTokens: number | undefined): number | undefined {
  if (route.costEur === undefined) return undefined;
  if (job.kind === 'video') return route.costEur * (job.params.seconds ?? 0);
  if (job.kind === 'chat') return (route.costEur * (outputTokens ?? 0)) / 1000;
  return route.costEur;
}
