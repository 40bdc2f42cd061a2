import { describe, it, expect } from 'vitest';
import {
  AUTO_CHAT_MODEL_ID,
  CHAT_MODELS,
  IMAGE_MODELS,
  OPENAI_CHAT_MODELS,
  UPSCALE_MODELS,
  VIDEO_MODELS,
  findChatModel,
  findImageModel,
  findOpenAiChatModel,
  findOpenAiVideoModel,
  findVideoModel,
  listModels,
  resolveModel,
} from '../../../../core/catalogue/models';

describe('catalogue', () => {
  it('lists every row of the spec tables, each tagged with its kind', () => {
    const models = listModels();
    expect(models.filter((m) => m.kind === 'image')).toHaveLength(15);
    expect(models.filter((m) => m.kind === 'video')).toHaveLength(21);
    // Group C's three per-reply models and group B's thirteen per-token ones (auto aside).
    expect(models.filter((m) => m.kind === 'chat' && m.unit === 'reply')).toHaveLength(3);
    expect(models.filter((m) => m.kind === 'chat' && m.unit === '1k_output_tokens')).toHaveLength(13);
    // Upscale is not priced by the spec: two models of our own (docs/decisions/0038-upscale.md).
    expect(models.filter((m) => m.kind === 'upscale').map((m) => m.id)).toEqual(['upscale', 'upscale-pro']);
    expect(models).toHaveLength(54);
  });

  it('never uses a name twice within a kind', () => {
    for (const models of [IMAGE_MODELS, VIDEO_MODELS, [...CHAT_MODELS, ...OPENAI_CHAT_MODELS], UPSCALE_MODELS]) {
      const names = models.flatMap((m) => [m.id, ...m.aliases]);
      expect(new Set(names).size).toBe(names.length);
    }
  });

  it('keeps every amount in whole millicredits', () => {
    const amounts = [
      ...IMAGE_MODELS.map((m) => m.priceMc),
      ...CHAT_MODELS.map((m) => m.priceMc),
      ...OPENAI_CHAT_MODELS.map((m) => m.priceMc),
      ...VIDEO_MODELS.flatMap((m) => Object.values(m.ratesMc)),
    ];
    for (const mc of amounts) expect(Number.isSafeInteger(mc) && mc > 0).toBe(true);
    expect(findVideoModel('wan')?.ratesMc['720p']).toBe(10_100);
  });

  it('gives every image model defaults it actually offers', () => {
    for (const m of IMAGE_MODELS) {
      expect(m.qualities).toContain(m.defaultQuality);
      expect(m.aspects).toContain(m.defaultAspect);
    }
  });

  it('gives every video model defaults it actually offers', () => {
    for (const m of VIDEO_MODELS) {
      const [min, max] = m.secondsRange;
      expect(m.defaultSeconds).toBeGreaterThanOrEqual(min);
      expect(m.defaultSeconds).toBeLessThanOrEqual(max);
      expect(m.ratesMc[m.defaultResolution]).toBeDefined();
      expect(m.aspects).toEqual(['16:9', '9:16', '1:1']);
    }
  });

  // The spec's dashes: no rate may be invented for them.
  it.each([
    ['wan', '480p'],
    ['seedance-2-5', '1080p'],
    ['ltx', '480p'],
    ['ltx', '720p'],
  ] as const)('%s has no %s rate', (id, resolution) => {
    expect(findVideoModel(id)?.ratesMc[resolution]).toBeUndefined();
  });

  it('finds models by id and alias, and nothing for an unknown name', () => {
    expect(findImageModel('flux')?.id).toBe('image-flux');
    expect(findImageModel('image-flux')?.id).toBe('image-flux');
    expect(findImageModel('nope')).toBeUndefined();
    expect(findVideoModel('nope')).toBeUndefined();
    expect(findChatModel('nope')).toBeUndefined();
    // Names belong to their kind.
    expect(findImageModel('kling')).toBeUndefined();
    expect(findVideoModel('image-flux')).toBeUndefined();
  });

  it('resolves auto to the automatically chosen chat model', () => {
    expect(AUTO_CHAT_MODEL_ID).toBe('chat-haiku');
    expect(findChatModel('auto')?.id).toBe('chat-haiku');
  });

  it.each([
    ['chat-haiku', 32_000],
    ['chat-sonnet', 64_000],
    ['chat-opus', 64_000],
  ])('%s accepts prompts up to %i characters and has an output cap', (id, maxPromptChars) => {
    const model = findChatModel(id);
    expect(model?.maxPromptChars).toBe(maxPromptChars);
    expect(model?.defaultMaxOutputTokens).toBeGreaterThan(0);
  });
});

describe('group B ids (DESIGN §6)', () => {
  it.each([
    ['kling-2.1-pro', 'kling'],
    ['wan-2.1', 'wan'],
    ['minimax-video-01', 'hailuo'],
  ])('video %s is priced as %s', (openaiId, id) => {
    expect(findOpenAiVideoModel(openaiId)?.id).toBe(id);
    expect(findVideoModel(openaiId)).toBeUndefined();
  });

  it.each([
    ['flux', 'image-flux'],
    ['gpt-image-1', 'gpt-image-1'],
    ['image-nano-pro', 'image-nano-pro'],
  ])('image %s is the group C model %s', (openaiId, id) => {
    expect(findImageModel(openaiId)?.id).toBe(id);
  });

  it('points gpt-image-1 hd at its high variant', () => {
    const hd = findImageModel('gpt-image-1')?.hdVariant;
    expect(hd).toBe('gpt-image-1-high');
    expect(findImageModel(hd!)?.priceMc).toBe(17_000);
  });
});

describe('group B chat (per output token)', () => {
  it('has every chat id of the spec’s group B list, each with a rate per 1,000 output tokens and caps', () => {
    const ids = [
      'claude-fable',
      'claude-opus',
      'claude-sonnet',
      'claude-haiku',
      'deepseek-v4-flash',
      'kimi-k2',
      'glm-5.1',
      'llama-3.3',
      'deepseek-v4-pro',
      'gemini-pro',
      'gpt-5.5',
      'minimax',
      'grok-4.3',
    ];
    expect(OPENAI_CHAT_MODELS.map((m) => m.id).sort()).toEqual([...ids].sort());
    for (const m of OPENAI_CHAT_MODELS) {
      expect(m.unit).toBe('1k_output_tokens');
      expect(m.defaultMaxOutputTokens).toBeLessThanOrEqual(m.maxOutputTokens);
    }
    expect(findOpenAiChatModel('auto')?.id).toBe('claude-haiku');
  });

  it('keeps each group’s chat ids to itself; group A accepts both', () => {
    expect(resolveModel('chat', 'gpt-5.5', 'group-c')).toBeUndefined();
    expect(resolveModel('chat', 'chat-haiku', 'group-b')).toBeUndefined();
    expect(resolveModel('chat', undefined, 'group-b')?.id).toBe('claude-haiku');
    expect(resolveModel('chat', 'gpt-5.5', 'group-a')?.id).toBe('gpt-5.5');
    expect(resolveModel('chat', undefined, 'group-a')?.id).toBe('chat-haiku');
  });

  it.each([
    ['sora-2', 'sora'],
    ['veo-3-fast', 'veo'],
    ['wan-2.6', 'kie-wan-2-6'],
  ])('prices group B video %s as %s', (openaiId, id) => {
    expect(findOpenAiVideoModel(openaiId)?.id).toBe(id);
  });
});
