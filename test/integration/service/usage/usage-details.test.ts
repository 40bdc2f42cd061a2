/**
 * Cache and reasoning tokens carried through, offline: each door (group B's chat completions and
 * Responses with the `openai` SDK, Anthropic's Messages API with `@anthropic-ai/sdk`, group A's
 * chat record) × each kind of upstream (the simulator, an OpenAI-compatible server, Anthropic's
 * Messages API; test/support/upstream-servers.ts) × {cached, reasoning, both}, streamed and whole.
 * Each door shows the upstream's figures in its own rules of inclusion (OpenAI's input counts the
 * cache, Anthropic's does not; reasoning is output), the ledger keeps them beside the output
 * charged for, and the charge is the output tokens at the model's rate.
 */
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { findOpenAiChatModel } from '../../../../core/catalogue/models';
import { mcToCredits } from '../../../../core/money';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import type { TokenUsage } from '../../../../core/vocabulary';
import { untilFinishedV1 } from '../../../support/api';
import { startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startAnthropicUpstream, startOpenAiUpstream } from '../../../support/upstream-servers';

let h: Harness;
let anthropicUp: Awaited<ReturnType<typeof startAnthropicUpstream>>;
let openaiUp: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let baseURL: string;
let key: string;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

beforeAll(async () => {
  anthropicUp = await startAnthropicUpstream();
  openaiUp = await startOpenAiUpstream();
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'anthropic',
        protocol: 'anthropic',
        baseUrl: anthropicUp.baseUrl,
        apiKey: 'sk-ant-test',
        timeoutMs: 5000,
        models: { 'claude-sonnet': { model: 'claude-sonnet-4-5', priority: 0 } },
      },
      {
        name: 'openai',
        protocol: 'openai',
        baseUrl: openaiUp.baseUrl,
        timeoutMs: 5000,
        models: { 'gpt-5.5': { model: 'gpt-5.5-upstream', priority: 0 } },
      },
    ],
  });
  h = await startHarness({ provider: () => createProviderRouter(config.upstreams, createSimulator(), http) });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  ({ key } = await h.account({ credits: 1000 }));
}, 120_000);
afterAll(async () => {
  await h?.close();
  await anthropicUp?.close();
  await openaiUp?.close();
  http.close();
});

interface Figures {
  cached: number;
  written: number;
  reasoning: number;
}
const CASES: Record<string, Figures> = {
  cached: { cached: 30, written: 5, reasoning: 0 },
  reasoning: { cached: 0, written: 0, reasoning: 12 },
  both: { cached: 30, written: 5, reasoning: 12 },
};

/** Each kind of upstream: the model it serves, and the prompt's own (uncached) input and visible output it reports. */
const UPSTREAMS = {
  simulator: {
    model: 'claude-haiku',
    uncached: (prompt: string) => Math.ceil(prompt.length / 4),
    visible: 6,
    // The simulator reports its reasoning apart, as OpenAI's models do.
    reportsReasoning: true,
  },
  openai: { model: 'gpt-5.5', uncached: () => 3, visible: 5, reportsReasoning: true },
  anthropic: {
    model: 'claude-sonnet',
    // Anthropic's server counts the messages as it received them.
    uncached: () => Math.ceil(JSON.stringify(anthropicUp.received.at(-1)!.body!.messages).length / 4),
    visible: 5,
    // Anthropic counts extended thinking in output_tokens and reports no figure of its own for it.
    reportsReasoning: false,
  },
} as const;
type UpstreamKind = keyof typeof UPSTREAMS;

function promptFor(figures: Figures, label: string): string {
  const sim = `sim:delay=0 sim:pace=0 sim:tokens=6 sim:cached=${figures.cached} sim:cache_write=${figures.written} sim:reasoning=${figures.reasoning}`;
  const up = `up:cached=${figures.cached} up:cache_write=${figures.written} up:reasoning=${figures.reasoning}`;
  return `Tell me about the tide (${label}). ${sim} ${up}`;
}

/** What every door must come to, by OpenAI's rules of inclusion (core/vocabulary.ts TokenUsage). */
function expected(kind: UpstreamKind, figures: Figures, prompt: string): TokenUsage {
  const u = UPSTREAMS[kind];
  return {
    inputTokens: u.uncached(prompt) + figures.cached + figures.written,
    cachedInputTokens: figures.cached,
    cacheWriteTokens: figures.written,
    outputTokens: u.visible + figures.reasoning,
    reasoningTokens: u.reportsReasoning ? figures.reasoning : 0,
  };
}

const openai = () => new OpenAI({ apiKey: key, baseURL: `${baseURL}/v1`, maxRetries: 0 });
const anthropic = () => new Anthropic({ apiKey: key, baseURL, maxRetries: 0 });

/** The generation's record as group A shows it: the ledger's copy of the figures and the charge. */
async function recordOf(id: string): Promise<{ usage: TokenUsage | null; creditsCharged: number; status: string }> {
  const g = await untilFinishedV1(h, key, id);
  return (await h.call('GET', `/api/v1/generations/${g.id}`, { key })).json();
}

async function expectLedger(id: string, model: string, want: TokenUsage): Promise<void> {
  const g = await recordOf(id);
  expect(g.status).toBe('succeeded');
  expect(g.usage).toEqual(want);
  expect(g.creditsCharged).toBe(mcToCredits(chargeForTokens(want.outputTokens, findOpenAiChatModel(model)!.priceMc)));
}

type Door = (kind: UpstreamKind, figures: Figures, streamed: boolean) => Promise<void>;

const DOORS: Record<string, Door> = {
  async 'group B chat completions'(kind, figures, streamed) {
    const { model } = UPSTREAMS[kind];
    const prompt = promptFor(figures, `chat ${kind} ${streamed}`);
    const messages = [{ role: 'user' as const, content: prompt }];
    let id: string;
    let usage: OpenAI.CompletionUsage | null | undefined;
    if (streamed) {
      const stream = await openai().chat.completions.create({
        model,
        messages,
        max_tokens: 64,
        stream: true,
        stream_options: { include_usage: true },
      });
      id = '';
      for await (const chunk of stream) {
        id = chunk.id;
        if (chunk.usage) usage = chunk.usage;
      }
    } else {
      const reply = await openai().chat.completions.create({ model, messages, max_tokens: 64 });
      id = reply.id;
      usage = reply.usage;
    }
    const want = expected(kind, figures, prompt);
    expect(usage).toEqual({
      prompt_tokens: want.inputTokens,
      completion_tokens: want.outputTokens,
      total_tokens: want.inputTokens + want.outputTokens,
      prompt_tokens_details: { cached_tokens: want.cachedInputTokens },
      completion_tokens_details: { reasoning_tokens: want.reasoningTokens },
    });
    await expectLedger(id, model, want);
  },

  async 'group B responses'(kind, figures, streamed) {
    const { model } = UPSTREAMS[kind];
    const prompt = promptFor(figures, `responses ${kind} ${streamed}`);
    let response: OpenAI.Responses.Response | undefined;
    if (streamed) {
      const stream = await openai().responses.create({ model, input: prompt, max_output_tokens: 64, stream: true });
      for await (const event of stream) if (event.type === 'response.completed') response = event.response;
    } else {
      response = await openai().responses.create({ model, input: prompt, max_output_tokens: 64 });
    }
    const want = expected(kind, figures, prompt);
    const shape = {
      input_tokens: want.inputTokens,
      input_tokens_details: { cached_tokens: want.cachedInputTokens, cache_write_tokens: want.cacheWriteTokens },
      output_tokens: want.outputTokens,
      output_tokens_details: { reasoning_tokens: want.reasoningTokens },
      total_tokens: want.inputTokens + want.outputTokens,
    };
    expect(response?.usage).toEqual(shape);
    await expectLedger(response!.id, model, want);
    // A stored response read back answers the figures the ledger kept.
    expect((await openai().responses.retrieve(response!.id)).usage).toEqual(shape);
  },

  async 'anthropic messages'(kind, figures, streamed) {
    const { model } = UPSTREAMS[kind];
    const prompt = promptFor(figures, `messages ${kind} ${streamed}`);
    const params = { model, max_tokens: 64, messages: [{ role: 'user' as const, content: prompt }] };
    const message = streamed
      ? await anthropic().messages.stream(params).finalMessage()
      : await anthropic().messages.create(params);
    const want = expected(kind, figures, prompt);
    expect(message.usage).toMatchObject({
      input_tokens: want.inputTokens - want.cachedInputTokens - want.cacheWriteTokens,
      cache_read_input_tokens: want.cachedInputTokens,
      cache_creation_input_tokens: want.cacheWriteTokens,
      output_tokens: want.outputTokens,
    });
    await expectLedger(message.id, model, want);
  },

  async 'group A chat record'(kind, figures) {
    const { model } = UPSTREAMS[kind];
    const prompt = promptFor(figures, `group A ${kind}`);
    const res = await h.call('POST', '/api/v1/generate', {
      key,
      body: { kind: 'chat', model, prompt, max_tokens: 64 },
      headers: { prefer: 'respond-async' },
    });
    expect([200, 202], res.body).toContain(res.statusCode);
    const { id } = await untilFinishedV1(h, key, res.json<{ id: string }>().id);
    // Read once the upstream has had the request (the Anthropic server's count depends on it).
    await expectLedger(id, model, expected(kind, figures, prompt));
  },
};

describe('usage details through every door', () => {
  for (const [door, run] of Object.entries(DOORS))
    for (const kind of Object.keys(UPSTREAMS) as UpstreamKind[])
      for (const [label, figures] of Object.entries(CASES))
        for (const streamed of door === 'group A chat record' ? [false] : [false, true])
          it(`${door} × ${kind} × ${label}${streamed ? ', streamed' : ''}`, () => run(kind, figures, streamed), 60_000);

  it('the usage report sums the details beside the output charged for', async () => {
    const report = (await h.call('GET', '/api/v1/usage?group_by=kind', { key })).json<{
      total: Record<string, number>;
    }>();
    expect(report.total.cachedInputTokens).toBeGreaterThan(0);
    expect(report.total.cacheWriteTokens).toBeGreaterThan(0);
    expect(report.total.reasoningTokens).toBeGreaterThan(0);
    expect(report.total.inputTokens).toBeGreaterThan(report.total.cachedInputTokens! + report.total.cacheWriteTokens!);
    expect(report.total.outputTokens).toBeGreaterThan(report.total.reasoningTokens!);
  });
});
