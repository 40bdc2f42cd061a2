/**
 * The libraries agents are built with, unmodified, against the embedded default (the simulator),
 * over real HTTP: the Vercel AI SDK with `@ai-sdk/openai` (its default Responses path, three turns),
 * `@ai-sdk/openai-compatible` (chat completions) and `@ai-sdk/anthropic` (Anthropic's Messages API):
 * generateText, streamText, structured output, a tool loop, generateImage with gpt-image-1 and an
 * edit; and LangChain's `withStructuredOutput` with its default method. Every charge is the tokens
 * the client was told.
 */
import type { AddressInfo } from 'node:net';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI } from '@langchain/openai';
import { generateImage, generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import type { ModelMessage } from 'ai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chargeForTokens } from '../../../../core/catalogue/pricing';
import { eventually, startHarness } from '../../../support/harness';
import type { Harness } from '../../../support/harness';

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await startHarness({ syncWaitMs: 20_000 });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
});

/** claude-haiku's rate per 1,000 output tokens, in millicredits. */
const HAIKU = 700;
const settled = (key: string) =>
  eventually(async () => {
    const b = (await h.call('GET', '/api/v1/balance', { key })).json<{ balance: number; holdsActive: number }>();
    return b.holdsActive === 0 ? b.balance : undefined;
  });
/** What the ledger charged an account in all, in millicredits. */
const chargedMc = async (accountId: string) =>
  Number(
    (
      await h.pool.query<{ mc: string }>(
        'SELECT COALESCE(sum(charged_mc), 0)::text AS mc FROM generations WHERE account_id = $1',
        [accountId],
      )
    ).rows[0]!.mc,
  );

const recipe = z.object({ title: z.string(), minutes: z.number().int().min(1).max(240), steps: z.array(z.string()) });
const weatherTool = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `18 °C and sunny in ${city}`,
});

describe('the AI SDK with @ai-sdk/openai (its default: the Responses API)', () => {
  it('three turns of generateText, each after the first sending the previous reply back as an item_reference', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: key });
    const messages: ModelMessage[] = [];
    let tokens = 0;
    for (const turn of ['Name a colour sim:tokens=3', 'And another sim:tokens=4', 'One more sim:tokens=5']) {
      messages.push({ role: 'user', content: turn });
      const result = await generateText({ model: openai('claude-haiku'), messages });
      expect(result.text.split(' ')).toHaveLength(Number(/tokens=(\d)/.exec(turn)![1]));
      tokens += result.usage.outputTokens!;
      messages.push(...result.response.messages);
    }
    const kept = await h.pool.query<{ internal: { messages?: unknown[] } }>(
      "SELECT internal FROM generations WHERE account_id = $1 AND kind = 'chat' ORDER BY id DESC LIMIT 1",
      [accountId],
    );
    // The third turn ran the whole conversation: three user turns and the two replies referenced.
    expect(kept.rows[0]!.internal.messages).toHaveLength(5);
    const charged = chargeForTokens(3, HAIKU) + chargeForTokens(4, HAIKU) + chargeForTokens(5, HAIKU);
    expect(tokens).toBe(12);
    expect(await settled(key)).toBe(10 - charged / 1000);
    expect(await chargedMc(accountId)).toBe(charged);
  });

  it('streamText, generateObject and a tool loop', async () => {
    const { key } = await h.account({ credits: 10 });
    const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: key });
    const stream = streamText({ model: openai('claude-haiku'), prompt: 'Tell me sim:tokens=6' });
    let text = '';
    for await (const piece of stream.textStream) text += piece;
    expect(text.split(' ')).toHaveLength(6);
    expect((await stream.usage).outputTokens).toBe(6);

    const { object } = await generateObject({ model: openai('claude-haiku'), schema: recipe, prompt: 'A soup recipe' });
    expect(recipe.parse(object)).toEqual(object);

    const loop = await generateText({
      model: openai('claude-haiku'),
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(4),
      prompt: 'Use get_weather for Paris',
    });
    expect(loop.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    expect(loop.steps[0]!.toolResults[0]).toMatchObject({
      toolName: 'get_weather',
      output: expect.stringMatching(/18 °C/),
    });
    expect(loop.text.length).toBeGreaterThan(0);
  });

  it('generateImage with gpt-image-1 (base64 by default), and an edit of it', async () => {
    const { key } = await h.account({ credits: 100 });
    const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: key });
    const { image } = await generateImage({
      model: openai.image('gpt-image-1'),
      prompt: 'a lighthouse',
      size: '1024x1024',
    });
    expect((await sharp(image.uint8Array).metadata()).format).toBe('png');
    const edited = await generateImage({
      model: openai.image('gpt-image-1'),
      prompt: { text: 'make it night', images: [image.uint8Array] },
    });
    const meta = await sharp(edited.image.uint8Array).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 1024, height: 1024 });
    expect(await settled(key)).toBe(100 - 6 - 6);
  });
});

describe('the AI SDK with @ai-sdk/openai-compatible (chat completions)', () => {
  it('generateText, streamText, generateObject and a tool loop; charged the tokens reported', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const provider = createOpenAICompatible({
      name: 'gensvc',
      baseURL: `${base}/v1`,
      apiKey: key,
      supportsStructuredOutputs: true,
      includeUsage: true,
    });
    const model = provider('claude-haiku');
    const whole = await generateText({ model, prompt: 'Hi sim:tokens=4' });
    expect(whole.usage.outputTokens).toBe(4);
    const stream = streamText({ model, prompt: 'Hi sim:tokens=5' });
    await stream.consumeStream();
    expect((await stream.usage).outputTokens).toBe(5);
    const { object } = await generateObject({ model, schema: recipe, prompt: 'A recipe' });
    expect(recipe.parse(object)).toEqual(object);
    const loop = await generateText({
      model,
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(4),
      prompt: 'Use get_weather for Rome',
    });
    expect(loop.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    const told = [whole.usage, await stream.usage, ...loop.steps.map((s) => s.usage)];
    await settled(key);
    const objectTokens = (
      await h.pool.query<{ t: number }>(
        "SELECT (params->>'outputTokens')::int AS t FROM generations WHERE account_id = $1 ORDER BY id",
        [accountId],
      )
    ).rows.map((r) => r.t);
    expect(objectTokens).toHaveLength(told.length + 1);
    expect(await chargedMc(accountId)).toBe(objectTokens.reduce((sum, t) => sum + chargeForTokens(t, HAIKU), 0));
  });
});

describe('the AI SDK with @ai-sdk/anthropic (Anthropic’s Messages API)', () => {
  it('generateText, streamText, generateObject (output_config.format) and a tool loop; usage is the charge', async () => {
    const { key, accountId } = await h.account({ credits: 10 });
    const anthropic = createAnthropic({ baseURL: `${base}/v1`, apiKey: key });
    const model = anthropic('claude-haiku-4-5');
    const whole = await generateText({ model, prompt: 'Hi sim:tokens=4', maxOutputTokens: 100 });
    expect(whole.text.split(' ')).toHaveLength(4);
    const stream = streamText({ model, prompt: 'Hi sim:tokens=5', maxOutputTokens: 100 });
    let text = '';
    for await (const piece of stream.textStream) text += piece;
    expect(text.split(' ')).toHaveLength(5);
    const { object } = await generateObject({ model, schema: recipe, prompt: 'A recipe', maxOutputTokens: 500 });
    expect(recipe.parse(object)).toEqual(object);
    const loop = await generateText({
      model,
      tools: { get_weather: weatherTool },
      stopWhen: stepCountIs(4),
      prompt: 'Use get_weather for Oslo',
      maxOutputTokens: 200,
    });
    expect(loop.steps.map((s) => s.finishReason)).toEqual(['tool-calls', 'stop']);
    const told = [whole.usage, await stream.usage, ...loop.steps.map((s) => s.usage)].reduce(
      (sum, u) => sum + chargeForTokens(u.outputTokens!, HAIKU),
      0,
    );
    await settled(key);
    const objectMc = (
      await h.pool.query<{ mc: number }>(
        "SELECT charged_mc AS mc FROM generations WHERE account_id = $1 AND internal ? 'responseFormat'",
        [accountId],
      )
    ).rows[0]!.mc;
    expect(await chargedMc(accountId)).toBe(told + objectMc);
  });
});

describe('LangChain', () => {
  it('withStructuredOutput with its default method (a JSON Schema response_format)', async () => {
    const { key } = await h.account({ credits: 10 });
    const model = new ChatOpenAI({ model: 'claude-sonnet', apiKey: key, configuration: { baseURL: `${base}/v1` } });
    const structured = model.withStructuredOutput(recipe, { name: 'recipe' });
    const result = await structured.invoke('A soup recipe');
    expect(recipe.parse(result)).toEqual(result);
  });
});
