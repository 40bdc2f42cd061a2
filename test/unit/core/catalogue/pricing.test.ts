import { describe, it, expect } from 'vitest';
import type { Resolution } from '../../../../core/generation/params';
import { InvalidRequestError, UnknownCostError } from '../../../../core/errors';
import { mcToCredits } from '../../../../core/money';
import {
  capChatPrompt,
  chargeForTokens,
  quoteChat,
  quoteImage,
  quoteVideo,
  snapAspect,
} from '../../../../core/catalogue/pricing';

// The expected prices below are typed in from the spec's group C tables, not read from the
// catalogue, so a slip in the catalogue fails here.

/** Runs `fn` and returns what it threw, so a test can look at the error's fields. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('image pricing (spec: Image pricing)', () => {
  // id or alias sent, canonical id, credits per image
  it.each([
    ['image-flux', 'image-flux', 3],
    ['flux', 'image-flux', 3],
    ['kie-z-image', 'kie-z-image', 3],
    ['kie-seedream-4', 'kie-seedream-4', 4],
    ['image-flux-dev', 'image-flux-dev', 5],
    ['image-qwen', 'image-qwen', 5],
    ['gpt-image-1', 'gpt-image-1', 6],
    ['gpt-image', 'gpt-image-1', 6],
    ['image-seedream-3', 'image-seedream-3', 6],
    ['image-nano-banana', 'image-nano-banana', 8],
    ['image-nano-banana-2', 'image-nano-banana-2', 8],
    ['image-recraft-v3', 'image-recraft-v3', 9],
    ['image-flux-ultra', 'image-flux-ultra', 12],
    ['image-ideogram-v2', 'image-ideogram-v2', 15],
    ['image-nano-pro', 'image-nano-pro', 17],
    ['nano-pro', 'image-nano-pro', 17],
    ['gpt-image-1-high', 'gpt-image-1-high', 17],
    ['image-gpt-high', 'image-gpt-high', 22],
    ['gpt-high', 'image-gpt-high', 22],
  ])('%s costs as %s: %d credits', (sent, canonical, credits) => {
    const quote = quoteImage({ model: sent });
    expect(quote.kind).toBe('image');
    expect(quote.model).toBe(canonical);
    expect(mcToCredits(quote.priceMc)).toBe(credits);
  });

  it('falls back to the model default quality without changing the price', () => {
    expect(quoteImage({ model: 'gpt-image-1', quality: 'low' }).params.quality).toBe('low');
    expect(quoteImage({ model: 'gpt-image-1', quality: 'ultra' }).params.quality).toBe('medium');
    // 'high' is sold as the gpt-image-1-high row, not at the 6-credit price.
    expect(quoteImage({ model: 'gpt-image-1', quality: 'high' }).params.quality).toBe('medium');
    const flux = quoteImage({ model: 'flux', quality: 'hd' });
    expect(flux.params.quality).toBe('standard');
    expect(mcToCredits(flux.priceMc)).toBe(3);
  });

  it('snaps the aspect and derives a 1024 px long side in multiples of 16', () => {
    expect(quoteImage({ model: 'image-flux' }).params).toMatchObject({ aspect: '1:1', width: 1024, height: 1024 });
    expect(quoteImage({ model: 'image-flux', aspect: '16:10' }).params).toMatchObject({
      aspect: '16:9',
      width: 1024,
      height: 576,
    });
    expect(quoteImage({ model: 'image-flux', aspect: '9:16' }).params).toMatchObject({
      aspect: '9:16',
      width: 576,
      height: 1024,
    });
    // gpt-image renders only 1:1, 3:2 and 2:3; 1024 × 2/3 = 682.7 rounds to 688.
    expect(quoteImage({ model: 'gpt-image-1', aspect: '16:9' }).params).toMatchObject({
      aspect: '3:2',
      width: 1024,
      height: 688,
    });
  });

  it('refuses a missing model as invalid and an unknown one as unknown_cost', () => {
    const missing = thrown(() => quoteImage({}));
    expect(missing).toBeInstanceOf(InvalidRequestError);
    expect(missing).toMatchObject({ status: 400, type: 'invalid_request_error', details: { param: 'model' } });

    const unknown = thrown(() => quoteImage({ model: 'dall-e-9' }));
    expect(unknown).toBeInstanceOf(UnknownCostError);
    expect(unknown).toMatchObject({ status: 400, type: 'unknown_cost' });
  });
});

describe('chat pricing (spec: Chat)', () => {
  // model sent (undefined = omitted), model that runs, requested model recorded, credits per reply
  it.each([
    ['chat-haiku', 'chat-haiku', 'chat-haiku', 1],
    ['chat-sonnet', 'chat-sonnet', 'chat-sonnet', 2],
    ['chat-opus', 'chat-opus', 'chat-opus', 4],
    ['auto', 'chat-haiku', 'auto', 1],
    [undefined, 'chat-haiku', 'auto', 1],
  ])('%s runs as %s', (sent, runs, requested, credits) => {
    const quote = quoteChat({ model: sent });
    expect(quote).toMatchObject({ kind: 'chat', model: runs, requestedModel: requested });
    expect(mcToCredits(quote.priceMc)).toBe(credits);
  });

  it('carries the prompt cap of the model that runs', () => {
    expect(quoteChat({}).params.maxPromptChars).toBe(32_000);
    expect(quoteChat({ model: 'chat-opus' }).params.maxPromptChars).toBe(64_000);
  });

  it('refuses an unknown model as unknown_cost', () => {
    const error = thrown(() => quoteChat({ model: 'gpt-5.5' }));
    expect(error).toBeInstanceOf(UnknownCostError);
    expect(error).toMatchObject({ status: 400, type: 'unknown_cost' });
  });
});

describe('video pricing (spec: Video pricing)', () => {
  type Rate = number | '-';
  type Row = [
    id: string,
    min: number,
    max: number,
    defaultSeconds: number,
    defaultResolution: Resolution,
    r480: Rate,
    r720: Rate,
    r1080: Rate,
    defaultCredits: number,
  ];
  // The spec's row, then the default run's total worked out by hand (default seconds × rate).
  const VIDEO_TABLE: Row[] = [
    ['wan', 5, 10, 5, '720p', '-', 10.1, 15.1, 50.5],
    ['kling', 5, 10, 5, '720p', 8.5, 8.5, 13, 42.5],
    ['kling-3-pro', 3, 15, 10, '720p', 28.1, 35.1, 56.1, 351],
    ['seedance', 4, 15, 5, '720p', 9.6, 20.6, 51.1, 103],
    ['seedance-2-fast', 3, 12, 5, '720p', 8, 16.6, 51.1, 83],
    ['seedance-2-5', 4, 30, 5, '720p', 24, 51, '-', 255],
    ['seedance-lite', 3, 12, 5, '720p', 2, 3, 6, 15],
    ['sora', 4, 20, 5, '720p', 7, 12, 67, 60],
    ['veo', 4, 8, 5, '720p', 15.1, 18, 56, 90],
    ['veo31', 4, 8, 6, '720p', 40.1, 40.1, 40.1, 240.6],
    ['hailuo', 6, 10, 6, '720p', 5, 5, 8.2, 30],
    ['ltx', 6, 10, 6, '1080p', '-', '-', 6.1, 36.6],
    ['kie-wan-2-5', 5, 10, 5, '720p', 6.1, 6.1, 10.1, 30.5],
    ['kie-hailuo-02', 6, 10, 6, '720p', 3, 5, 8, 30],
    ['kie-seedance-2', 3, 15, 5, '720p', 12, 20.6, 51.1, 103],
    ['kie-seedance-2-fast', 3, 12, 5, '720p', 10, 16.6, 51.1, 83],
    ['kie-seedance-2-mini', 3, 12, 5, '720p', 6, 10.3, 20.6, 51.5],
    ['kie-seedance-lite', 3, 10, 5, '720p', 4, 6, 11, 30],
    ['kie-kling-3-turbo', 5, 10, 5, '1080p', 9.1, 9.1, 11.3, 56.5],
    ['kie-wan-2-6', 5, 10, 5, '720p', 7.1, 7.1, 10.5, 35.5],
    ['kling-25-turbo', 5, 10, 5, '720p', 8.6, 8.6, 8.6, 43],
  ];
  const rates = (r480: Rate, r720: Rate, r1080: Rate): Record<Resolution, Rate> => ({
    '480p': r480,
    '720p': r720,
    '1080p': r1080,
  });

  it.each(VIDEO_TABLE)(
    '%s by default: %i-%i s range, %i s at %s',
    (id, _min, _max, seconds, resolution, _a, _b, _c, credits) => {
      const quote = quoteVideo({ model: id });
      expect(quote).toMatchObject({ kind: 'video', model: id, params: { seconds, resolution, aspect: '16:9' } });
      expect(mcToCredits(quote.priceMc)).toBe(credits);
    },
  );

  it.each(VIDEO_TABLE)('%s clamps seconds to %i-%i', (id, min, max, _s, resolution, r480, r720, r1080) => {
    const rate = rates(r480, r720, r1080)[resolution] as number;
    for (const [asked, runs] of [
      [0, min],
      [min - 1, min],
      [max + 1, max],
      [1000, max],
    ] as const) {
      const quote = quoteVideo({ model: id, seconds: asked });
      expect(quote.params.seconds).toBe(runs);
      expect(mcToCredits(quote.priceMc)).toBeCloseTo(runs * rate, 6);
    }
  });

  it.each(VIDEO_TABLE)(
    '%s prices each listed resolution and falls back on a dash',
    (id, _min, _max, seconds, defaultResolution, r480, r720, r1080, defaultCredits) => {
      for (const [resolution, rate] of Object.entries(rates(r480, r720, r1080)) as [Resolution, Rate][]) {
        const quote = quoteVideo({ model: id, quality: resolution });
        if (rate === '-') {
          expect(quote.params.resolution).toBe(defaultResolution);
          expect(mcToCredits(quote.priceMc)).toBe(defaultCredits);
        } else {
          expect(quote.params.resolution).toBe(resolution);
          expect(mcToCredits(quote.priceMc)).toBeCloseTo(seconds * rate, 6);
        }
      }
    },
  );

  it('prices the example from the brief: kling-3-pro, 10 s at 1080p', () => {
    expect(mcToCredits(quoteVideo({ model: 'kling-3-pro', seconds: 10, quality: '1080p' }).priceMc)).toBe(561);
  });

  it('takes seconds as given when asked (an edit of a source at its whole length), at the model’s rate', () => {
    // kling runs 5 to 10 s at 8.5 credits a second in 720p: an extended source of 20 s is edited whole.
    const whole = quoteVideo({ model: 'kling', seconds: 20, quality: '720p' }, 'group-a', 'as-given');
    expect(whole.params.seconds).toBe(20);
    expect(mcToCredits(whole.priceMc)).toBe(170);
    expect(quoteVideo({ model: 'kling', seconds: 20 }).params.seconds).toBe(10);
  });

  it('rounds seconds to the nearest whole second before clamping', () => {
    expect(quoteVideo({ model: 'kling', seconds: 5.4 }).params.seconds).toBe(5);
    expect(quoteVideo({ model: 'kling', seconds: 5.5 }).params.seconds).toBe(6);
    expect(quoteVideo({ model: 'kling', seconds: 9.6 }).params.seconds).toBe(10);
    expect(quoteVideo({ model: 'kling', seconds: 10.4 }).params.seconds).toBe(10);
    expect(mcToCredits(quoteVideo({ model: 'wan', seconds: 7.2 }).priceMc)).toBe(70.7);
  });

  it('refuses seconds that are not a finite number', () => {
    for (const seconds of [Number.NaN, Infinity, -Infinity]) {
      const error = thrown(() => quoteVideo({ model: 'kling', seconds }));
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ details: { param: 'seconds' } });
    }
  });

  it('falls back to the default resolution for a value that is not a resolution', () => {
    expect(quoteVideo({ model: 'kling', quality: '4k' }).params.resolution).toBe('720p');
  });

  it('snaps the aspect and sizes a small preview (long side 320 px, multiples of 16)', () => {
    expect(quoteVideo({ model: 'kling' }).params).toMatchObject({ aspect: '16:9', width: 320, height: 176 });
    expect(quoteVideo({ model: 'kling', aspect: '9:20' }).params).toMatchObject({
      aspect: '9:16',
      width: 176,
      height: 320,
    });
    expect(quoteVideo({ model: 'kling', aspect: '1:1' }).params).toMatchObject({
      aspect: '1:1',
      width: 320,
      height: 320,
    });
  });

  it('refuses a missing model as invalid and an unknown one as unknown_cost', () => {
    expect(thrown(() => quoteVideo({}))).toMatchObject({ type: 'invalid_request_error', details: { param: 'model' } });
    // A group B id is not a group C id: group B resolves it first (findOpenAiVideoModel).
    for (const model of ['kling-9', 'kling-2.1-pro']) {
      const error = thrown(() => quoteVideo({ model }));
      expect(error).toBeInstanceOf(UnknownCostError);
      expect(error).toMatchObject({ status: 400, type: 'unknown_cost' });
    }
  });
});

describe('snapAspect', () => {
  const COMMON = ['1:1', '16:9', '9:16', '4:3', '3:4'];

  it.each([
    ['16:10', '16:9'],
    ['2:3', '3:4'],
    ['16:9', '16:9'],
    [' 16 : 9 ', '16:9'],
    ['1920:1080', '16:9'],
    ['2.39:1', '16:9'],
    ['1:3', '9:16'],
    ['5:4', '4:3'],
  ])('%s snaps to %s', (requested, expected) => {
    expect(snapAspect(requested, COMMON, '1:1')).toBe(expected);
  });

  it('uses the fallback when no aspect is given', () => {
    expect(snapAspect(undefined, COMMON, '16:9')).toBe('16:9');
    expect(snapAspect('  ', COMMON, '16:9')).toBe('16:9');
  });

  it.each(['abc', '0:1', '1:0', '16x9', '16:9:1', '-16:9', '16:'])(
    'refuses %j as invalid_request_error on aspect',
    (requested) => {
      const error = thrown(() => snapAspect(requested, COMMON, '1:1'));
      expect(error).toBeInstanceOf(InvalidRequestError);
      expect(error).toMatchObject({ status: 400, details: { param: 'aspect' } });
    },
  );
});

describe('capChatPrompt', () => {
  it('leaves a prompt within the cap alone', () => {
    expect(capChatPrompt('hello', 5)).toEqual({ prompt: 'hello', truncated: false });
  });

  it('keeps the beginning of a longer prompt', () => {
    expect(capChatPrompt('Summarise this: abcdef', 15)).toEqual({ prompt: 'Summarise this:', truncated: true });
  });

  it('does not split a surrogate pair at the cut', () => {
    expect(capChatPrompt('ab😀cd', 3)).toEqual({ prompt: 'ab', truncated: true });
  });
});

describe('per-token chat (group B)', () => {
  it('holds max_tokens, or the model’s default cap, at the model’s rate', () => {
    expect(quoteChat({ model: 'claude-sonnet', maxTokens: 1000 }, 'group-b')).toMatchObject({
      model: 'claude-sonnet',
      priceMc: 2000,
      params: { maxTokens: 1000, ratePer1kMc: 2000 },
    });
    expect(quoteChat({ model: 'auto' }, 'group-b')).toMatchObject({
      model: 'claude-haiku',
      priceMc: chargeForTokens(4096, 700),
      params: { maxTokens: 4096 },
    });
  });

  it('refuses max_tokens above the model’s largest output', () => {
    expect(() => quoteChat({ model: 'llama-3.3', maxTokens: 9000 }, 'group-b')).toThrow(/at most 8192/);
  });

  it('charges whole millicredits rounded up: never zero for a token, never more for fewer tokens', () => {
    expect(chargeForTokens(0, 700)).toBe(0);
    expect(chargeForTokens(1, 100)).toBe(1);
    expect(chargeForTokens(7, 700)).toBe(5);
    expect(chargeForTokens(1000, 1500)).toBe(1500);
    for (let t = 1; t < 300; t++) expect(chargeForTokens(t, 700)).toBeLessThanOrEqual(chargeForTokens(t + 1, 700));
  });

  it('prices hd images as the high variant where one is listed, else twice', () => {
    expect(quoteImage({ model: 'gpt-image-1', hd: true })).toMatchObject({
      model: 'gpt-image-1-high',
      priceMc: 17_000,
    });
    expect(quoteImage({ model: 'flux', hd: true })).toMatchObject({
      model: 'image-flux',
      priceMc: 6_000,
      params: { hd: true },
    });
    expect(quoteImage({ model: 'flux' }).priceMc).toBe(3_000);
  });
});
