import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import type { GenerationRow } from '../../../../core/db/generations';
import type { OutputStore } from '../../../../core/storage/output-store';
import {
  FORMAT_EVENTS,
  eventFor,
  formatsSendingByDefault,
  progressStepCrossed,
  unknownEvents,
} from '../../../../core/webhooks/events';
import type { GenerationOutcome, WebhookFormat } from '../../../../core/webhooks/events';
import { DISABLE_AFTER_FAILING_MS, RETRY_SCHEDULE_MS, ROTATION_OVERLAP_MS } from '../../../../core/webhooks/schedule';
import { createSecretBox } from '../../../../core/webhooks/secret-box';
import {
  deliveryHeaders,
  generateSecret,
  SECRET_PATTERN,
  verifyServiceSignature,
} from '../../../../core/webhooks/signing';
import { checkWebhookUrl } from '../../../../core/webhooks/url-check';
import { deliveryPayload } from '../../../../core/webhooks/payload';

describe('the retry schedule (DESIGN §6)', () => {
  it('waits exactly 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h after successive failures: ten attempts over about 3 days', () => {
    const s = 1000;
    expect(RETRY_SCHEDULE_MS).toEqual([
      5 * s,
      300 * s,
      1800 * s,
      7200 * s,
      18_000 * s,
      36_000 * s,
      50_400 * s,
      72_000 * s,
      86_400 * s,
    ]);
    const total = RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total / 86_400_000).toBeCloseTo(3.15, 2);
    expect(DISABLE_AFTER_FAILING_MS).toBe(3 * 86_400_000);
    expect(ROTATION_OVERLAP_MS).toBe(86_400_000);
  });
});

describe('signatures', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"event":"ping","endpoint_id":"wh_x","created_at":"2026-01-01T00:00:00.000Z"}';
  const input = { deliveryId: 'whd_01abc', event: 'ping', timestamp: 1_767_225_600, body, secrets: [secret] };

  it('X-Service-Signature is t=<unix>,v1=<hex HMAC-SHA256 keyed with the secret string, over "<t>.<body>">', () => {
    const headers = deliveryHeaders(input);
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`1767225600.${body}`).digest('hex');
    expect(headers['x-service-signature']).toBe(`t=1767225600,v1=${expected}`);
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'x-service-event': 'ping',
      'x-service-delivery': 'whd_01abc',
      'webhook-id': 'whd_01abc',
      'webhook-timestamp': '1767225600',
    });
  });

  it('webhook-signature is Standard Webhooks: v1,<base64 HMAC keyed with the decoded secret over "<id>.<t>.<body>">', () => {
    const headers = deliveryHeaders(input);
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(headers['webhook-signature']).toBe(
      `v1,${createHmac('sha256', key).update(`whd_01abc.1767225600.${body}`).digest('base64')}`,
    );
    // The official library agrees (its clock checks the timestamp, so sign for now).
    const now = Math.floor(Date.now() / 1000);
    expect(new Webhook(secret).verify(body, deliveryHeaders({ ...input, timestamp: now }))).toEqual(JSON.parse(body));
  });

  it('carries one signature per valid secret during a rotation, each verifying alone', () => {
    const next = generateSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = deliveryHeaders({ ...input, timestamp: now, secrets: [next, secret] });
    expect(headers['x-service-signature']!.split(',')).toHaveLength(3);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const s of [next, secret]) {
      expect(verifyServiceSignature(headers['x-service-signature']!, body, s, { nowSeconds: now })).toBe(true);
      expect(() => new Webhook(s).verify(body, headers)).not.toThrow();
    }
  });

  it('does not verify a tampered body, a wrong secret or a stale timestamp', () => {
    const now = Math.floor(Date.now() / 1000);
    const header = deliveryHeaders({ ...input, timestamp: now })['x-service-signature']!;
    expect(verifyServiceSignature(header, body, secret, { nowSeconds: now })).toBe(true);
    expect(verifyServiceSignature(header, body.replace('ping', 'pong'), secret, { nowSeconds: now })).toBe(false);
    expect(verifyServiceSignature(header, body, generateSecret(), { nowSeconds: now })).toBe(false);
    expect(verifyServiceSignature(header, body, secret, { nowSeconds: now + 301 })).toBe(false);
    expect(verifyServiceSignature(header, body, secret, { nowSeconds: now + 299 })).toBe(true);
  });

  it('makes secrets of whsec_ and 32 random bytes in base64', () => {
    const a = generateSecret();
    expect(a).toMatch(SECRET_PATTERN);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(generateSecret()).not.toBe(a);
  });
});

describe('secrets at rest', () => {
  const box = createSecretBox('a key of at least sixteen characters');
  it('seals and opens; the sealed text shows nothing of the secret', () => {
    const secret = generateSecret();
    const sealed = box.seal(secret, 'wh_1');
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.open(sealed, 'wh_1')).toBe(secret);
    expect(box.seal(secret, 'wh_1')).not.toBe(sealed);
  });

  it('refuses to open under another endpoint id, another key, or once altered', () => {
    const sealed = box.seal(generateSecret(), 'wh_1');
    expect(() => box.open(sealed, 'wh_2')).toThrow();
    expect(() => createSecretBox('another key of sixteen characters').open(sealed, 'wh_1')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`v1:${raw.toString('base64')}`, 'wh_1')).toThrow();
  });
});

describe('the catalogues', () => {
  it('openai: a response or another generation ended, named as OpenAI names them; batch events without listing them', () => {
    const outcome = (o: Partial<GenerationOutcome>) => ({ response: false, cancelled: false, incomplete: false, ...o });
    expect(eventFor('openai', 'chat', 'succeeded', outcome({ response: true }))).toBe('response.completed');
    expect(eventFor('openai', 'chat', 'succeeded', outcome({ response: true, incomplete: true }))).toBe(
      'response.incomplete',
    );
    expect(eventFor('openai', 'chat', 'failed', outcome({ response: true }))).toBe('response.failed');
    expect(eventFor('openai', 'chat', 'failed', outcome({ response: true, cancelled: true }))).toBe(
      'response.cancelled',
    );
    expect(eventFor('openai', 'video', 'succeeded')).toBe('generation.completed');
    expect(eventFor('openai', 'image', 'failed', outcome({ cancelled: true }))).toBe('generation.cancelled');
    expect(eventFor('openai', 'video', 'running')).toBeUndefined();
    expect(FORMAT_EVENTS.openai).toEqual(expect.arrayContaining(['batch.completed', 'batch.expired']));
    expect(formatsSendingByDefault('batch.failed')).toEqual(['openai']);
    expect(unknownEvents('openai', ['response.completed', 'generation.succeeded'])).toEqual(['generation.succeeded']);
  });

  it('catalogue A (nested): completed and failed, every kind; catalogue B (flat): every state of video and upscale', () => {
    for (const kind of ['image', 'video', 'chat', 'upscale'] as const) {
      expect([eventFor('nested', kind, 'queued'), eventFor('nested', kind, 'running')]).toEqual([undefined, undefined]);
      expect(eventFor('nested', kind, 'succeeded')).toBe('generation.completed');
      expect(eventFor('nested', kind, 'failed')).toBe('generation.failed');
    }
    for (const kind of ['video', 'upscale'] as const) {
      expect((['queued', 'running', 'succeeded', 'failed'] as const).map((s) => eventFor('flat', kind, s))).toEqual([
        ...FORMAT_EVENTS.flat,
      ]);
    }
    expect(eventFor('flat', 'image', 'succeeded')).toBeUndefined();
    expect(eventFor('flat', 'chat', 'failed')).toBeUndefined();
    expect(unknownEvents('nested', ['generation.completed', 'generation.queued'])).toEqual(['generation.queued']);
    expect(unknownEvents('flat', ['generation.completed'])).toEqual(['generation.completed']);
    // Progress is in neither catalogue (what an endpoint without a list gets) but either may list it.
    expect(FORMAT_EVENTS.nested).not.toContain('generation.progress');
    expect(unknownEvents('nested', ['generation.progress'])).toEqual([]);
    expect(unknownEvents('flat', ['generation.progress', 'generation.queued'])).toEqual([]);
  });

  it('a progress event is owed once per 10 % step crossed, the highest when a write jumps several, never 0 or 100', () => {
    expect(progressStepCrossed(null, 5)).toBeUndefined();
    expect(progressStepCrossed(null, 10)).toBe(10);
    expect(progressStepCrossed(9, 14)).toBe(10);
    expect(progressStepCrossed(10, 19)).toBeUndefined();
    expect(progressStepCrossed(15, 47)).toBe(40);
    expect(progressStepCrossed(85, 99)).toBe(90);
    expect(progressStepCrossed(90, 99)).toBeUndefined();
    // Over a whole run, however the writes fall, no step is owed twice.
    const owed: number[] = [];
    let before: number | null = null;
    for (const p of [3, 12, 18, 25, 25, 41, 44, 63, 70, 71, 99]) {
      const step = progressStepCrossed(before, p);
      if (step !== undefined) owed.push(step);
      before = p;
    }
    expect(owed).toEqual([10, 20, 40, 60, 70, 90]);
  });
});

describe('payloads', () => {
  const store: OutputStore = {
    put: async () => undefined,
    get: async () => undefined,
    remove: async () => undefined,
    signedUrl: async (key) => `https://files.test/${key}?signature=fresh`,
    open: async () => undefined,
  };
  const base: GenerationRow = {
    id: 'gen_1',
    accountId: 'acct_1',
    apiKeyId: null,
    customerId: null,
    kind: 'video',
    model: 'kling',
    status: 'succeeded',
    params: {},
    internal: {},
    prompt: 'p',
    quoteMc: 42_500,
    chargedMc: 42_500,
    freeChat: false,
    outputKey: 'gen_1/output.webm',
    outputText: null,
    previewKeys: {},
    error: null,
    createdAt: new Date('2026-01-01T00:00:00Z'),
    startedAt: null,
    finishedAt: null,
    progressPercent: null,
    queuePosition: null,
    measuredSeconds: null,
    servedBy: null,
    batchId: null,
    batchLine: null,
    tokenUsage: null,
  };
  const at = new Date('2026-01-01T00:01:00Z');
  const source = (event: string, format: WebhookFormat, generation: GenerationRow | undefined = base) => ({
    deliveryId: 'whd_1',
    event,
    format,
    endpointId: 'wh_1',
    createdAt: at,
    generation,
  });

  it('nested: the group C record with a fresh signed URL', async () => {
    expect(await deliveryPayload(source('generation.completed', 'nested'), store)).toEqual({
      event: 'generation.completed',
      generation: {
        id: 'gen_1',
        kind: 'video',
        model: 'kling',
        status: 'succeeded',
        outputUrl: 'https://files.test/gen_1/output.webm?signature=fresh',
        creditsCharged: 42.5,
        error: null,
      },
    });
  });

  it('flat: the spec’s fields; queued and running carry no output and no charge, whenever they are sent', async () => {
    expect(await deliveryPayload(source('generation.succeeded', 'flat'), store)).toEqual({
      event: 'generation.succeeded',
      generation_id: 'gen_1',
      kind: 'video',
      output_url: 'https://files.test/gen_1/output.webm?signature=fresh',
      credits_charged: 42.5,
      created_at: '2026-01-01T00:01:00.000Z',
    });
    for (const event of ['generation.queued', 'generation.running']) {
      expect(await deliveryPayload(source(event, 'flat'), store)).toMatchObject({
        event,
        output_url: '',
        credits_charged: 0,
      });
    }
    const failed = {
      ...base,
      status: 'failed' as const,
      chargedMc: 0,
      outputKey: null,
      error: { code: 'provider_failed', message: 'no', retryable: false },
    };
    expect(await deliveryPayload(source('generation.failed', 'flat', failed), store)).toMatchObject({
      output_url: '',
      credits_charged: 0,
    });
  });

  it('a generation made for a customer of the platform names it in both formats, progress included', async () => {
    const forCustomer = { ...base, customerId: 'user_42' };
    expect(await deliveryPayload(source('generation.completed', 'nested', forCustomer), store)).toMatchObject({
      generation: { id: 'gen_1', customer: 'user_42' },
    });
    expect(await deliveryPayload(source('generation.succeeded', 'flat', forCustomer), store)).toMatchObject({
      generation_id: 'gen_1',
      customer: 'user_42',
    });
    for (const format of ['nested', 'flat'] as const) {
      const progress = await deliveryPayload(
        { ...source('generation.progress', format, forCustomer), progress: 40 },
        store,
      );
      expect(JSON.stringify(progress)).toContain('"customer":"user_42"');
    }
  });

  it('ping', async () => {
    expect(await deliveryPayload(source('ping', 'nested', undefined), store)).toEqual({
      event: 'ping',
      endpoint_id: 'wh_1',
      created_at: '2026-01-01T00:01:00.000Z',
    });
  });

  it('openai: OpenAI’s event object, naming what happened by its id, with the delivery’s id as its own', async () => {
    expect(await deliveryPayload(source('response.completed', 'openai'), store)).toEqual({
      id: 'whd_1',
      object: 'event',
      type: 'response.completed',
      created_at: 1_767_225_660,
      data: { id: 'gen_1' },
    });
    const ping = { ...source('ping', 'openai'), generation: undefined };
    expect(await deliveryPayload(ping, store)).toMatchObject({ type: 'ping', data: { id: 'wh_1' } });
  });
});

describe('webhook URLs at registration', () => {
  const production = {
    developmentMode: false,
    policy: { allowPrivateNetworks: false },
    resolve: async (name: string) => (name === 'internal.test' ? ['10.0.0.8'] : ['93.184.216.34']),
  };
  const development = {
    developmentMode: true,
    policy: { allowPrivateNetworks: true },
    resolve: async () => ['127.0.0.1'],
  };

  it('accepts https to a public host, normalising the URL', async () => {
    expect(await checkWebhookUrl('https://Example.COM:443/hooks', production)).toBe('https://example.com/hooks');
  });

  it.each([
    ['http://example.com/', /must be https\./],
    ['https://internal.test/', /resolves to a private network address/],
    ['https://[::ffff:169.254.169.254]/', /metadata/],
    ['https://example.com/#frag', /fragment/],
    ['not a url', /not valid/],
  ])('refuses %s in production', async (url, message) => {
    await expect(checkWebhookUrl(url, production)).rejects.toThrow(message);
  });

  it('allows plain http only to loopback, and only in development mode', async () => {
    expect(await checkWebhookUrl('http://localhost:4000/h', development)).toBe('http://localhost:4000/h');
    expect(await checkWebhookUrl('http://[::1]:4000/h', development)).toBe('http://[::1]:4000/h');
    await expect(checkWebhookUrl('http://10.0.0.1/h', development)).rejects.toThrow(
      /only to loopback in development mode/,
    );
    await expect(checkWebhookUrl('http://localhost:4000/h', production)).rejects.toThrow(/must be https/);
    await expect(checkWebhookUrl('https://169.254.169.254/', development)).rejects.toThrow(/metadata/);
  });

  it('says so when the host does not resolve', async () => {
    await expect(
      checkWebhookUrl('https://nowhere.test/', {
        ...production,
        resolve: async () => {
          throw new Error('ENOTFOUND');
        },
      }),
    ).rejects.toThrow(/could not be resolved/);
  });
});
