import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { breakerSettings, ConfigError, loadConfig, upstreamSettings } from '../../../core/config';

const upstreams = (models: Record<string, string>, protocol = 'openai') =>
  JSON.stringify({ upstreams: [{ name: 'up', protocol, baseUrl: 'http://10.0.0.5:8000/v1', apiKey: 'sk-x', models }] });

describe('UPSTREAMS_JSON and UPSTREAMS_FILE', () => {
  it('route no model without them: the simulator runs everything', () => {
    expect(upstreamSettings(loadConfig({}))).toEqual([]);
  });

  it('parse the routes once, with defaults, from the variable or from a file', () => {
    const fromEnv = upstreamSettings(
      loadConfig({ UPSTREAMS_JSON: upstreams({ 'gpt-5.5': 'gpt-5.5-2026', 'gpt-image-1': 'gpt-image-1' }) }),
    );
    expect(fromEnv).toEqual([
      expect.objectContaining({
        name: 'up',
        protocol: 'openai',
        timeoutMs: 120_000,
        models: { 'gpt-5.5': 'gpt-5.5-2026', 'gpt-image-1': 'gpt-image-1' },
      }),
    ]);
    const file = join(mkdtempSync(join(tmpdir(), 'upstreams-')), 'upstreams.json');
    writeFileSync(file, upstreams({ kling: 'fal-ai/kling-video/v2.1/pro' }, 'queue-video'));
    expect(upstreamSettings(loadConfig({ UPSTREAMS_FILE: file }))[0]).toMatchObject({
      protocol: 'queue-video',
      pollMs: 2_000,
    });
  });

  it.each([
    [{ UPSTREAMS_JSON: '{not json' }, /UPSTREAMS_JSON: is not readable JSON/],
    [
      { UPSTREAMS_JSON: upstreams({ 'gpt-9': 'x' }) },
      /UPSTREAMS_JSON: upstreams\.0\.models\.gpt-9: is not a catalogue model id/,
    ],
    [{ UPSTREAMS_JSON: upstreams({ kling: 'x' }) }, /kling: is a video model; a openai upstream serves chat and image/],
    [
      { UPSTREAMS_JSON: upstreams({ 'gpt-5.5': 'x' }, 'queue-video') },
      /is a chat model; a queue-video upstream serves video/,
    ],
    [
      {
        UPSTREAMS_JSON: JSON.stringify({
          upstreams: [
            {
              name: 'rep',
              protocol: 'replicate',
              baseUrl: 'https://api.replicate.com/v1',
              models: { kling: { model: 'kwaivgi/kling', extend: 'kwaivgi/kling-extend' } },
            },
          ],
        }),
      },
      /models\.kling: extend and edit are paths of a queue-video upstream/,
    ],
    [{ UPSTREAMS_FILE: '/nonexistent/upstreams.json' }, /UPSTREAMS_FILE: is not readable JSON: ENOENT/],
    [{ UPSTREAMS_JSON: upstreams({ flux: 'x' }), UPSTREAMS_FILE: '/x' }, /UPSTREAMS_FILE/],
  ])('refuse a wrong configuration at start-up, naming the variable: %j', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('list a model under several upstreams, each with its name, priority, weight and cost; the breaker has defaults', () => {
    const config = loadConfig({
      UPSTREAMS_JSON: JSON.stringify({
        upstreams: [
          {
            name: 'fal',
            protocol: 'queue-video',
            baseUrl: 'https://queue.fal.run',
            models: { kling: { model: 'fal-ai/kling', costEur: 0.09 } },
          },
          {
            name: 'replicate',
            protocol: 'replicate',
            baseUrl: 'https://api.replicate.com/v1',
            models: {
              kling: { model: 'kwaivgi/kling-v2.1', priority: 0, weight: 3 },
              upscale: 'nightmareai/real-esrgan',
            },
          },
        ],
      }),
    });
    expect(upstreamSettings(config).map((u) => u.models)).toEqual([
      { kling: { model: 'fal-ai/kling', weight: 1, costEur: 0.09 } },
      { kling: { model: 'kwaivgi/kling-v2.1', priority: 0, weight: 3 }, upscale: 'nightmareai/real-esrgan' },
    ]);
    expect(breakerSettings(config)).toEqual({ failures: 3, cooldownMs: 30_000 });
  });

  it.each([
    [
      JSON.stringify({
        upstreams: [
          { name: 'a', protocol: 'openai', baseUrl: 'http://a/v1', models: { flux: 'x' } },
          { name: 'a', protocol: 'openai', baseUrl: 'http://b/v1', models: { flux: 'y' } },
        ],
      }),
      /upstreams\.1\.name: a is the name of an earlier upstream/,
    ],
    [
      upstreams({ 'gpt-5.5': 'x' }, 'replicate'),
      /is a chat model; a replicate upstream serves image and video and upscale/,
    ],
    [
      JSON.stringify({
        upstreams: [
          { name: 'a', protocol: 'openai', baseUrl: 'http://a/v1', models: { flux: { model: 'x', costEur: -1 } } },
        ],
      }),
      /models\.flux/,
    ],
    [JSON.stringify({ upstreams: [], breaker: { failures: 0 } }), /breaker\.failures/],
  ])('refuse several upstreams configured wrong: %s', (json, message) => {
    expect(() => loadConfig({ UPSTREAMS_JSON: json })).toThrow(message);
  });
});
