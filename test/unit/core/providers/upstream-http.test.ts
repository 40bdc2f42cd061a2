import { describe, expect, it } from 'vitest';
import { cancellingOnAbort, waitingOn } from '../../../../core/providers/upstream-http';
import type { QueuedJobEndpoint } from '../../../../core/providers/upstream-http';

const endpoint: QueuedJobEndpoint = {
  name: 'queue',
  baseUrl: 'https://queue.example',
  authorization: undefined,
  timeoutMs: 1_000,
  pollMs: 2_000,
  slowPollMs: 60_000,
};

describe('a job left waiting upstream', () => {
  it('is looked at every poll without a webhook, and only slowly with one', () => {
    expect(waitingOn(endpoint, 'req-1', { requestId: 'req-1' })).toEqual({
      waiting: { upstream: 'queue', jobId: 'req-1', resume: { requestId: 'req-1' }, pollMs: 2_000 },
    });
    const hooked = { ...endpoint, webhookUrl: 'https://gen.example/upstream-callbacks/queue' };
    expect(waitingOn(hooked, 'req-2', { id: 'req-2' }).waiting?.pollMs).toBe(60_000);
  });
});

describe('a job followed upstream until it ends', () => {
  it('is cancelled upstream once when the run is cancelled meanwhile, even if the cancel fails', async () => {
    const run = new AbortController();
    let cancels = 0;
    const cancelJob = () => {
      cancels += 1;
      return Promise.reject(new Error('the upstream is gone'));
    };
    const followed = cancellingOnAbort(run.signal, cancelJob, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      run.abort(new Error('cancelled'));
      run.signal.dispatchEvent(new Event('abort'));
      return 'ended';
    });
    await expect(followed).resolves.toBe('ended');
    expect(cancels).toBe(1);
  });

  it('is not cancelled by a cancellation that comes after it ended, nor when its work fails', async () => {
    const run = new AbortController();
    let cancels = 0;
    const cancelJob = async () => {
      cancels += 1;
    };
    await expect(cancellingOnAbort(run.signal, cancelJob, async () => 'file')).resolves.toBe('file');
    await expect(
      cancellingOnAbort(run.signal, cancelJob, () => Promise.reject(new Error('failed upstream'))),
    ).rejects.toThrow('failed upstream');
    run.abort();
    expect(cancels).toBe(0);
  });
});
