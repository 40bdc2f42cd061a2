/**
 * The simulator as an agent's model: structured output that validates against the client's
 * schema (checked with Ajv, an independent validator), function calls chosen as documented, and
 * the same answer for the same conversation.
 */
import Ajv2020 from 'ajv/dist/2020';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { sampleOf } from '../../../../core/providers/schema-sample';
import { createSimulator } from '../../../../core/providers/simulator';
import { toolCallAssembler } from '../../../../core/providers/tool-calls';
import type { ChatStreamEvent, ProviderJob } from '../../../../core/providers/types';
import type { ChatMessage, ChatTools, ResponseFormat } from '../../../../core/generation/params';

const ajv2020 = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const ajv7 = addFormats(new Ajv({ strict: false, allErrors: true }));

const SCHEMAS: Record<string, Record<string, unknown>> = {
  flat: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      age: { type: 'integer', minimum: 18, maximum: 99 },
      ok: { type: 'boolean' },
    },
    required: ['name', 'age', 'ok'],
    additionalProperties: false,
  },
  // As zod 4's toJSONSchema writes one: $defs, a nullable union, enums, formats, arrays with bounds.
  zod: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      recipe: { $ref: '#/$defs/recipe' },
      tags: {
        type: 'array',
        items: { type: 'string', enum: ['quick', 'vegan', 'spicy'] },
        minItems: 1,
        maxItems: 3,
        uniqueItems: true,
      },
      note: { anyOf: [{ type: 'string', maxLength: 12 }, { type: 'null' }] },
      when: { type: 'string', format: 'date-time' },
      contact: { type: 'string', format: 'email' },
      id: { type: 'string', format: 'uuid' },
      rating: { type: 'number', exclusiveMinimum: 0, maximum: 5, multipleOf: 0.5 },
    },
    required: ['recipe', 'tags', 'note', 'when', 'contact', 'id', 'rating'],
    additionalProperties: false,
    $defs: {
      recipe: {
        type: 'object',
        properties: {
          title: { type: 'string', minLength: 3 },
          steps: { type: 'array', items: { type: 'string' }, minItems: 2 },
          servings: { type: ['integer', 'null'], minimum: 1 },
        },
        required: ['title', 'steps', 'servings'],
        additionalProperties: false,
      },
    },
  },
  // As Pydantic and zod-to-json-schema write them: draft 7 `definitions`, allOf, const, tuples.
  pydantic: {
    type: 'object',
    definitions: {
      Point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] },
    },
    properties: {
      kind: { const: 'shape' },
      origin: { allOf: [{ $ref: '#/definitions/Point' }], description: 'where it starts' },
      pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], minItems: 2, maxItems: 2 },
      size: {
        oneOf: [
          { type: 'integer', minimum: 1, maximum: 3 },
          { type: 'string', enum: ['large'] },
        ],
      },
      code: { type: 'string', pattern: '^[a-z]+$' },
    },
    required: ['kind', 'origin', 'pair', 'size', 'code'],
  },
  recursive: {
    type: 'object',
    properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } },
    required: ['name'],
  },
};

describe('values made from a JSON Schema', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`${name}: valid, and the same for the same seed`, () => {
      const validate = (schema.$schema ? ajv2020 : ajv7).compile(schema);
      for (const seed of ['a', 'b', 'a longer prompt', '']) {
        const value = sampleOf(schema, seed);
        expect(validate(value), `${JSON.stringify(value)} ${ajv7.errorsText(validate.errors)}`).toBe(true);
        expect(sampleOf(schema, seed)).toEqual(value);
      }
    });
  }
});

const sim = createSimulator({ latencyMs: 0, paceMs: 0 });

function chatJob(
  messages: ChatMessage[],
  extra: { tools?: ChatTools; responseFormat?: ResponseFormat; maxTokens?: number } = {},
): ProviderJob {
  return {
    generationId: 'gen_test',
    kind: 'chat',
    model: 'claude-haiku',
    prompt: messages.map((m) => `${m.role}: ${m.content}`).join('\n'),
    params: { maxTokens: extra.maxTokens ?? 1000 },
    internal: {
      messages,
      ...(extra.tools ? { tools: extra.tools } : {}),
      ...(extra.responseFormat ? { responseFormat: extra.responseFormat } : {}),
    },
  };
}

async function streamed(job: ProviderJob) {
  const events: ChatStreamEvent[] = [];
  for await (const e of sim.streamChat(job, new AbortController().signal)) events.push(e);
  const calls = toolCallAssembler();
  let text = '';
  for (const e of events) {
    if (e.type === 'delta') text += e.text;
    else if (e.type === 'tool_call') calls.add(e);
  }
  return { events, text, calls: calls.calls() };
}

const weather = {
  name: 'get_weather',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
  },
};
const time = { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } };

describe('the simulator as an agent’s model', () => {
  it('answers JSON valid against the schema, streamed in pieces, each one token, the same every time', async () => {
    const schema = SCHEMAS.zod!;
    const job = chatJob([{ role: 'user', content: 'a recipe' }], {
      responseFormat: { type: 'json_schema', name: 'recipe', schema, strict: true },
    });
    const a = await streamed(job);
    expect(ajv2020.validate(schema, JSON.parse(a.text))).toBe(true);
    const deltas = a.events.filter((e) => e.type === 'delta');
    expect(deltas.length).toBeGreaterThan(3);
    expect(a.events.at(-1)).toMatchObject({ type: 'usage', outputTokens: deltas.length, reasoningTokens: 0 });
    expect((await streamed(job)).text).toBe(a.text);
    const whole = await sim.run(job, { heartbeat: () => undefined, signal: new AbortController().signal });
    expect(whole).toMatchObject({ text: a.text, outputTokens: deltas.length });
    const object = await streamed(
      chatJob([{ role: 'user', content: 'hi' }], { responseFormat: { type: 'json_object' } }),
    );
    expect(JSON.parse(object.text)).toMatchObject({ answer: expect.any(String) });
  });

  it('auto: calls a function only when the last user turn names it or asks with sim:tool, and answers its result in words', async () => {
    const tools: ChatTools = { functions: [weather, time], choice: 'auto' };
    expect((await streamed(chatJob([{ role: 'user', content: 'hello there' }], { tools }))).calls).toEqual([]);
    const named = await streamed(chatJob([{ role: 'user', content: 'use get_time then get_weather' }], { tools }));
    expect(named.calls.map((c) => c.name)).toEqual(['get_time']);
    const asked = await streamed(chatJob([{ role: 'user', content: 'weather? sim:tool=get_weather' }], { tools }));
    expect(asked.calls).toHaveLength(1);
    const call = asked.calls[0]!;
    expect(ajv7.validate(weather.parameters, JSON.parse(call.arguments))).toBe(true);
    // The arguments arrive in several pieces after the piece that names the call, as providers stream them.
    expect(asked.events.filter((e) => e.type === 'tool_call').length).toBeGreaterThan(3);
    const answered = await streamed(
      chatJob(
        [
          { role: 'user', content: 'weather? sim:tool=get_weather' },
          { role: 'assistant', content: '', toolCalls: [call] },
          { role: 'tool', toolCallId: call.id, content: '18 °C' },
        ],
        { tools },
      ),
    );
    expect(answered.calls).toEqual([]);
    expect(answered.text.length).toBeGreaterThan(0);
  });

  it('required calls the named one, else the first offered; a named choice calls that one; none never calls', async () => {
    const msg = [{ role: 'user' as const, content: 'anything' }];
    expect(
      (await streamed(chatJob(msg, { tools: { functions: [weather, time], choice: 'required' } }))).calls[0]!.name,
    ).toBe('get_weather');
    expect(
      (await streamed(chatJob(msg, { tools: { functions: [weather, time], choice: { name: 'get_time' } } }))).calls[0]!
        .name,
    ).toBe('get_time');
    expect((await streamed(chatJob(msg, { tools: { functions: [weather], choice: 'none' } }))).calls).toEqual([]);
    // A tool name inside another word is not a mention.
    expect(
      (await streamed(chatJob([{ role: 'user', content: 'my_get_weather_log' }], { tools: { functions: [weather] } })))
        .calls,
    ).toEqual([]);
  });
});
