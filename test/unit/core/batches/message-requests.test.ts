import { describe, expect, it } from 'vitest';
import { readMessageRequests } from '../../../../core/batches/message-requests';

const limits = { maxLines: 3, maxLineBytes: 200 };
const params = { model: 'claude-haiku', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

describe('a Message Batch’s inline requests', () => {
  it('become lines numbered from 1, each its custom_id and params', () => {
    const read = readMessageRequests(
      [
        { custom_id: 'a-1', params },
        { custom_id: 'B_2', params },
      ],
      limits,
    );
    expect(read.problems).toEqual([]);
    expect(read.lines).toEqual([
      { line: 1, customId: 'a-1', body: params },
      { line: 2, customId: 'B_2', body: params },
    ]);
  });

  it('names every problem by its place in requests, and keeps the good ones', () => {
    const read = readMessageRequests(
      [
        { custom_id: 'a', params },
        { params },
        { custom_id: 'a', params },
        'not an object',
        { custom_id: 'x'.repeat(65), params },
        { custom_id: 'b', params: [] },
        { custom_id: 'c', params: { long: 'x'.repeat(300) } },
        { custom_id: 'd', params, extra: true },
      ],
      { ...limits, maxLines: 10 },
    );
    expect(read.lines.map((l) => l.customId)).toEqual(['a']);
    expect(read.problems.map((p) => [p.line, p.code, p.param])).toEqual([
      [2, 'missing_required_parameter', 'requests[1].custom_id'],
      [3, 'duplicate_custom_id', 'requests[2].custom_id'],
      [4, 'invalid_request', 'requests[3]'],
      [5, 'missing_required_parameter', 'requests[4].custom_id'],
      [6, 'missing_required_parameter', 'requests[5].params'],
      [7, 'line_too_large', 'requests[6].params'],
      [8, 'invalid_request', 'requests[7].extra'],
    ]);
    expect(read.problems[1]!.message).toBe(
      'requests[2].custom_id: "a" is already used by requests[0]; each must be unique.',
    );
  });

  it('refuses an empty batch and one of more requests than a batch may have, whole', () => {
    expect(readMessageRequests([], limits).problems).toEqual([
      expect.objectContaining({ code: 'empty_batch', param: 'requests', line: null }),
    ]);
    const many = readMessageRequests(
      Array.from({ length: 4 }, (_, i) => ({ custom_id: `r${i}`, params })),
      limits,
    );
    expect(many.lines).toEqual([]);
    expect(many.problems).toEqual([
      expect.objectContaining({
        code: 'too_many_requests',
        message: 'requests: 4 requests is more than a batch may have (3).',
      }),
    ]);
  });
});
