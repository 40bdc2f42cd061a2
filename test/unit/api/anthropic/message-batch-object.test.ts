import { describe, expect, it } from 'vitest';
import { messageBatchOf } from '../../../../api/anthropic/batches';
import type { BatchView } from '../../../../service/batches/service';

const created = new Date('2026-12-01T10:00:00.000Z');
const view = (over: Partial<BatchView>): BatchView => ({
  id: 'batch_01abc',
  format: 'anthropic',
  endpoint: '/v1/messages',
  kind: 'chat',
  inputFileId: null,
  completionWindow: '24h',
  status: 'in_progress',
  errors: null,
  outputFileId: null,
  errorFileId: null,
  metadata: null,
  requestCounts: { total: 10, completed: 4, failed: 1 },
  stopped: { cancelled: 0, expired: 0 },
  running: 2,
  waiting: 3,
  creditsHeld: 1,
  creditsCharged: 0.5,
  createdAt: created,
  inProgressAt: created,
  expiresAt: new Date(created.getTime() + 24 * 3_600_000),
  finalizingAt: null,
  completedAt: null,
  failedAt: null,
  expiredAt: null,
  cancellingAt: null,
  cancelledAt: null,
  ...over,
});

describe('a batch as Anthropic’s MessageBatch', () => {
  it('counts every request as processing until the whole batch has ended, and has no results_url yet', () => {
    expect(messageBatchOf(view({}), 'https://gen.example')).toEqual({
      id: 'batch_01abc',
      type: 'message_batch',
      processing_status: 'in_progress',
      request_counts: { processing: 10, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
      created_at: '2026-12-01T10:00:00.000Z',
      expires_at: '2026-12-02T10:00:00.000Z',
      ended_at: null,
      cancel_initiated_at: null,
      archived_at: null,
      results_url: null,
    });
    const cancelling = new Date(created.getTime() + 60_000);
    expect(messageBatchOf(view({ status: 'cancelling', cancellingAt: cancelling }), 'x')).toMatchObject({
      processing_status: 'canceling',
      cancel_initiated_at: cancelling.toISOString(),
    });
  });

  it('once ended, splits what did not succeed into errored, canceled and expired, and points at its results', () => {
    const ended = new Date(created.getTime() + 120_000);
    const cancelled = view({
      status: 'cancelled',
      requestCounts: { total: 10, completed: 4, failed: 6 },
      stopped: { cancelled: 5, expired: 0 },
      cancellingAt: created,
      cancelledAt: ended,
    });
    expect(messageBatchOf(cancelled, 'https://gen.example')).toMatchObject({
      processing_status: 'ended',
      request_counts: { processing: 0, succeeded: 4, errored: 1, canceled: 5, expired: 0 },
      ended_at: ended.toISOString(),
      results_url: 'https://gen.example/v1/messages/batches/batch_01abc/results',
    });
    const expired = view({
      status: 'expired',
      requestCounts: { total: 10, completed: 7, failed: 3 },
      stopped: { cancelled: 0, expired: 3 },
      expiredAt: ended,
    });
    expect(messageBatchOf(expired, 'b').request_counts).toEqual({
      processing: 0,
      succeeded: 7,
      errored: 0,
      canceled: 0,
      expired: 3,
    });
  });
});
