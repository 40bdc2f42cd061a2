import type { UpstreamConfig } from '../config';
import type { SafeHttpClient } from '../net/safe-http';
import { createOpenAiUpstream } from './openai-upstream';
import { createQueueVideoUpstream } from './queue-video-upstream';
import type { Provider } from './types';

/**
 * The provider of each model: its configured upstream (UPSTREAMS_JSON / UPSTREAMS_FILE), else
 * `fallback` (the simulator). The API (streamed chat) and the worker (every other run) both use it.
 * `http` fetches the files upstreams hand back by URL, SSRF-safely (see upstream-http.ts).
 */
export function createProviderRouter(upstreams: readonly UpstreamConfig[], fallback: Provider, http: SafeHttpClient): Provider {
  const byModel = new Map<string, Provider>();
  for (const u of upstreams) {
    const scheme = (u.auth ?? (u.protocol === 'queue-video' ? 'key' : 'bearer')) === 'key' ? 'Key' : 'Bearer';
    const endpoint = { name: u.name, baseUrl: u.baseUrl, authorization: u.apiKey ? `${scheme} ${u.apiKey}` : undefined, timeoutMs: u.timeoutMs, models: u.models };
    const provider = u.protocol === 'openai' ? createOpenAiUpstream(endpoint, http) : createQueueVideoUpstream({ ...endpoint, pollMs: u.pollMs }, http);
    for (const model of Object.keys(u.models)) byModel.set(model, provider);
  }
  const of = (model: string): Provider => byModel.get(model) ?? fallback;
  return {
    run: (job, ctx) => of(job.model).run(job, ctx),
    streamChat: (job, signal) => of(job.model).streamChat(job, signal),
    serves: (model, feature) => of(model).serves?.(model, feature) ?? false,
  };
}
