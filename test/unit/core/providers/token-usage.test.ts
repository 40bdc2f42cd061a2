/**
 * Upstreams' usage read into one TokenUsage by OpenAI's rules of inclusion (cache in the input,
 * reasoning in the output), whichever protocol counted it; and the simulator's log probabilities.
 */
import { describe, expect, it } from 'vitest';
import { anthropicUsageOf } from '../../../../core/providers/anthropic-upstream';
import { openAiUsageOf } from '../../../../core/providers/openai-upstream';
import { simulatedLogprob } from '../../../../core/providers/simulated-logprobs';
import { choicesTokenUsage, tokenUsageOf, uncachedInputTokens } from '../../../../core/providers/token-usage';

describe('usage details', () => {
  it('reads OpenAI’s chat completions and Responses names alike', () => {
    const chat = openAiUsageOf({
      prompt_tokens: 85,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 30 },
      completion_tokens_details: { reasoning_tokens: 12 },
    });
    const responses = openAiUsageOf({
      input_tokens: 85,
      output_tokens: 20,
      input_tokens_details: { cached_tokens: 30 },
      output_tokens_details: { reasoning_tokens: 12 },
    });
    expect(chat).toEqual(responses);
    expect(chat).toMatchObject({ inputTokens: 85, cachedInputTokens: 30, outputTokens: 20, reasoningTokens: 12 });
    expect(openAiUsageOf({ prompt_tokens: 3 })).toBeUndefined();
  });

  it('adds Anthropic’s cache reads and writes to its input (50 + 30 + 5 = 85), and back out for its door', () => {
    const u = anthropicUsageOf({
      input_tokens: 50,
      output_tokens: 9,
      cache_read_input_tokens: 30,
      cache_creation_input_tokens: 5,
    });
    expect(u).toEqual({ inputTokens: 85, cachedInputTokens: 30, cacheWriteTokens: 5, outputTokens: 9 });
    const usage = tokenUsageOf(u, { prompt: 'ignored', charged: 9 });
    expect(usage).toEqual({
      inputTokens: 85,
      cachedInputTokens: 30,
      cacheWriteTokens: 5,
      outputTokens: 9,
      reasoningTokens: 0,
    });
    expect(uncachedInputTokens(usage)).toBe(50);
  });

  it('records the output charged for, reasoning within it, and estimates the input of a silent provider', () => {
    expect(tokenUsageOf({ reasoningTokens: 40 }, { prompt: 'x'.repeat(10), charged: 16 })).toEqual({
      inputTokens: 3,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: 16,
      reasoningTokens: 16,
    });
    const one = tokenUsageOf(undefined, { prompt: 'abcd', charged: 2 });
    expect(choicesTokenUsage([one, one])).toEqual({ ...one, outputTokens: 4 });
  });

  it('counts the prompt of n choices once, as OpenAI does, and the output of them all', () => {
    const first = { inputTokens: 40, cachedInputTokens: 0, cacheWriteTokens: 30, outputTokens: 9, reasoningTokens: 2 };
    const second = { inputTokens: 40, cachedInputTokens: 30, cacheWriteTokens: 0, outputTokens: 5, reasoningTokens: 1 };
    expect(choicesTokenUsage([first, second])).toEqual({ ...first, outputTokens: 14, reasoningTokens: 3 });
    expect(choicesTokenUsage([])).toEqual({
      inputTokens: 0,
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('makes well-formed, deterministic log probabilities', () => {
    const l = simulatedLogprob(' tide', 'seed', 5);
    expect(simulatedLogprob(' tide', 'seed', 5)).toEqual(l);
    expect(l.top[0]).toEqual({ token: ' tide', logprob: l.logprob, bytes: l.bytes });
    expect(new Set(l.top.map((t) => t.token)).size).toBe(5);
    expect(l.top.reduce((sum, t) => sum + Math.exp(t.logprob), 0)).toBeLessThan(1);
    expect(simulatedLogprob(' tide', 'seed', 0).top).toEqual([]);
  });
});
