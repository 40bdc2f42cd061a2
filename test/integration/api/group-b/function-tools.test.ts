/**
 * Function tools through group B, with the official `openai` client: passed on to a model served
 * by an OpenAI-compatible upstream (a local one that calls the first function it is offered, then
 * answers in text once it gets the result), called by the simulator as documented, and refused by
 * name for a model whose provider cannot take them. Calls are billed per token like any reply.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamsSchema } from '../../../../core/config/upstreams';
import { createSafeHttpClient } from '../../../../core/net/safe-http';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { createProviderRouter } from '../../../../core/providers/router';
import { createSimulator } from '../../../../core/providers/simulator';
import { credits } from '../../../support/api';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';
import { startOpenAiUpstream } from '../../../support/upstream-servers';

let h: Harness;
let up: Awaited<ReturnType<typeof startOpenAiUpstream>>;
let client: (key: string) => OpenAI;
const http = createSafeHttpClient({ policy: { allowPrivateNetworks: true } });

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
/** claude-sonnet's rate per 1,000 output tokens, in millicredits. */
const RATE = 2000;

beforeAll(async () => {
  up = await startOpenAiUpstream();
  const config = upstreamsSchema.parse({
    upstreams: [
      {
        name: 'local-openai',
        protocol: 'openai',
        baseUrl: up.baseUrl,
        timeoutMs: 2000,
        models: { 'claude-sonnet': 'upstream-sonnet' },
      },
    ],
  });
  // kimi-k2 stands for a model whose provider takes neither functions nor structured output.
  const simulator = createSimulator();
  const fallback = { ...simulator, serves: (model: string) => model !== 'kimi-k2' };
  h = await startHarness({ provider: createProviderRouter(config.upstreams, fallback, http) });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`;
  client = (key) => new OpenAI({ apiKey: key, baseURL, maxRetries: 0 });
});
afterAll(async () => {
  await h?.close();
  await up?.close();
  http.close();
});

const lastChatRequest = () => up.received.filter((r) => r.path === '/v1/chat/completions').at(-1)!.body!;
const settled = (key: string) =>
  eventually(async () => {
    const c = await credits(h, key);
    return c.holdsActive === 0 ? c : undefined;
  });

describe('chat completions with function tools', () => {
  it('passes the tools on, answers the call whole and streamed, and sends the result back', async () => {
    const { key } = await h.account({ credits: 50 });
    const tools = [{ type: 'function' as const, function: weather }];
    const whole = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    expect(lastChatRequest()).toMatchObject({
      model: 'upstream-sonnet',
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    const choice = whole.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      { id: 'call_up1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    expect(whole.usage?.completion_tokens).toBe(7);

    const stream = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      stream: true,
    });
    const pieces: string[] = [];
    let finish: string | null | undefined;
    let name: string | undefined;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name ??= call.function?.name;
        if (call.function?.arguments) pieces.push(call.function.arguments);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect({ name, args: pieces.join(''), finish }).toEqual({
      name: 'get_weather',
      args: '{"city":"Paris"}',
      finish: 'tool_calls',
    });

    // The client runs the function and sends its result: the upstream gets the call and the result
    // in its own format, and answers in text.
    const answer = await client(key).chat.completions.create({
      model: 'claude-sonnet',
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris? up:tokens=3' },
        { role: 'assistant', content: null, tool_calls: choice.message.tool_calls! },
        { role: 'tool', tool_call_id: 'call_up1', content: '18 °C, sunny' },
      ],
    });
    expect(answer.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'alpha beta gamma' } });
    expect(lastChatRequest().messages).toEqual([
      { role: 'user', content: 'Weather in Paris? up:tokens=3' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_up1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_up1', content: '18 °C, sunny' },
    ]);
    // Billed per token like any reply: 7 + 7 for the calls (the upstream's count), 3 for the answer.
    expect((await settled(key)).balance).toBe(50 - (2 * chargeForTokens(7, RATE) + chargeForTokens(3, RATE)) / 1000);
  });
});

describe('responses with function tools', () => {
  it('answers a function_call item whole and streamed, and continues with its output through previous_response_id', async () => {
    const { key } = await h.account({ credits: 50 });
    const tools = [{ type: 'function' as const, ...weather, strict: true }];
    const first = await client(key).responses.create({ model: 'claude-sonnet', input: 'Weather in Paris?', tools });
    expect(lastChatRequest()).toMatchObject({ tools: [{ type: 'function', function: { ...weather, strict: true } }] });
    expect(first.status).toBe('completed');
    expect(first.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_up1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      }),
    ]);
    expect(first.tools).toEqual([expect.objectContaining({ type: 'function', name: 'get_weather', strict: true })]);
    expect(first.tool_choice).toBe('auto');

    const stream = client(key).responses.stream({ model: 'claude-sonnet', input: 'Weather in Paris?', tools });
    const types: string[] = [];
    let args = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
    }
    const streamed = await stream.finalResponse();
    expect(args).toBe('{"city":"Paris"}');
    expect(types).toEqual(
      expect.arrayContaining([
        'response.output_item.added',
        'response.function_call_arguments.done',
        'response.output_item.done',
        'response.completed',
      ]),
    );
    expect(types).not.toContain('response.output_text.delta');
    expect(streamed.output).toEqual([
      expect.objectContaining({ type: 'function_call', name: 'get_weather', arguments: '{"city":"Paris"}' }),
    ]);

    // The stored call is carried over: the upstream sees it before the function's output.
    const next = await client(key).responses.create({
      model: 'claude-sonnet',
      previous_response_id: first.id,
      tools,
      input: [{ type: 'function_call_output', call_id: 'call_up1', output: '18 °C, sunny up:tokens=2' }],
    });
    expect(next.output_text).toBe('alpha beta');
    expect(lastChatRequest().messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_up1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_up1', content: '18 °C, sunny up:tokens=2' },
    ]);
    const read = await client(key).responses.retrieve(first.id);
    expect(read.output).toEqual(first.output);
    expect((await settled(key)).balance).toBe(50 - (2 * chargeForTokens(7, RATE) + chargeForTokens(2, RATE)) / 1000);
  });

  it('runs a background response with tools in its workflow; the call is on the stored response', async () => {
    const { key } = await h.account({ credits: 50 });
    const queued = await client(key).responses.create({
      model: 'claude-sonnet',
      input: 'Weather in Paris?',
      tools: [{ type: 'function', ...weather, strict: null }],
      background: true,
    });
    expect(queued.status).toBe('queued');
    const done = await eventually(async () => {
      const r = await client(key).responses.retrieve(queued.id);
      return r.status === 'completed' ? r : undefined;
    });
    expect(done.output).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'call_up1', arguments: '{"city":"Paris"}' }),
    ]);
  });

  it('on the simulator, a named tool is called; a provider without tools refuses them by name, with nothing held', async () => {
    const { key } = await h.account({ credits: 50 });
    const tools = [{ type: 'function' as const, ...weather, strict: null }];
    const called = await client(key).responses.create({
      model: 'claude-haiku',
      input: 'Use get_weather for Paris',
      tools,
    });
    expect(called.output).toEqual([expect.objectContaining({ type: 'function_call', name: 'get_weather' })]);
    const spent = await settled(key);
    const refusals = [
      () => client(key).responses.create({ model: 'kimi-k2', input: 'Weather?', tools }),
      () =>
        client(key).responses.create({
          model: 'kimi-k2',
          input: [{ type: 'function_call_output', call_id: 'c1', output: 'sunny' }],
        }),
      () =>
        client(key).chat.completions.create({
          model: 'kimi-k2',
          messages: [{ role: 'user', content: 'Weather?' }],
          tools: [{ type: 'function', function: weather }],
        }),
      () =>
        client(key).chat.completions.create({
          model: 'kimi-k2',
          messages: [{ role: 'user', content: 'Weather?' }],
          response_format: { type: 'json_object' },
        }),
      () =>
        client(key).responses.create({
          model: 'kimi-k2',
          input: 'Weather?',
          text: { format: { type: 'json_object' } },
        }),
    ];
    const params: (string | null | undefined)[] = [];
    for (const refuse of refusals) {
      const err = (await refuse().catch((e: unknown) => e)) as APIError;
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.message).toMatch(/not supported by the provider of kimi-k2/);
      params.push(err.param);
    }
    expect(params).toEqual(['tools', 'input', 'tools', 'response_format', 'text.format']);
    const builtIn = (await client(key)
      .responses.create({ model: 'claude-sonnet', input: 'Find it', tools: [{ type: 'web_search' }] })
      .catch((e: unknown) => e)) as APIError;
    expect(builtIn).toBeInstanceOf(OpenAI.BadRequestError);
    expect(builtIn.message).toMatch(/built-in tools/);
    expect(await credits(h, key)).toMatchObject({ balance: spent.balance, holdsActive: 0 });
  });
});
