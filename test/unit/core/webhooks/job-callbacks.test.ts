import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../../../core/errors';
import { callbackEventFor } from '../../../../core/webhooks/events';
import { callbackEventFilter } from '../../../../core/webhooks/job-callbacks';

describe('the events of a job’s callback', () => {
  it('a video or upscale sends every state change; an image or chat only its end', () => {
    for (const kind of ['video', 'upscale'] as const)
      expect(['queued', 'running', 'succeeded', 'failed'].map((s) => callbackEventFor(kind, s as never))).toEqual([
        'generation.queued',
        'generation.running',
        'generation.succeeded',
        'generation.failed',
      ]);
    for (const kind of ['image', 'chat'] as const)
      expect(['queued', 'running', 'succeeded', 'failed'].map((s) => callbackEventFor(kind, s as never))).toEqual([
        undefined,
        undefined,
        'generation.succeeded',
        'generation.failed',
      ]);
  });
});

describe('a callback’s event filter', () => {
  it('is none without words: every event of the job’s catalogue', () => {
    expect(callbackEventFilter(undefined, 'generation', 'webhook_events_filter')).toBeNull();
  });

  it('reads our event names, the statuses alone and Replicate’s words', () => {
    expect(callbackEventFilter(['start', 'completed', 'logs'], 'generation', 'f')).toEqual([
      'generation.running',
      'generation.succeeded',
      'generation.failed',
    ]);
    expect(callbackEventFilter(['queued', 'generation.failed', 'output'], 'generation', 'f')).toEqual([
      'generation.queued',
      'generation.failed',
      'generation.progress',
    ]);
    expect(callbackEventFilter(['completed', 'batch.expired'], 'batch', 'f')).toEqual([
      'batch.completed',
      'batch.expired',
    ]);
  });

  it('refuses a word it does not know, naming the field and what it takes', () => {
    const refusal = (() => {
      try {
        callbackEventFilter(['queued', 'finished'], 'generation', 'callback_events');
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(refusal).toBeInstanceOf(InvalidRequestError);
    expect(refusal).toMatchObject({
      details: { param: 'callback_events' },
      message: expect.stringMatching(/^callback_events: 'finished' is not an event of this job; use .*start/),
    });
    // Words of the language, not of the filter, are unknown too.
    expect(() => callbackEventFilter(['constructor'], 'generation', 'f')).toThrow(/'constructor'/);
    // A batch's callback hears of its end only.
    expect(() => callbackEventFilter(['running'], 'batch', 'callback_events')).toThrow(/'running'/);
  });
});
