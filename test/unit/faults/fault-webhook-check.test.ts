/**
 * The fault run's and the upgrade rehearsal's webhook judgement (faults/webhooks.ts): an event
 * counts as delivered whatever its repeats, and a delivery whose signature does not verify with
 * the endpoint's secret is named, however it arrived.
 */
import { describe, expect, it } from 'vitest';
import { deliveryHeaders, generateSecret } from '../../../core/webhooks/signing';
import { judgeDeliveries } from '../../../faults/webhooks';
import type { Delivery } from '../../../faults/webhooks';

const NOW = 1_800_000_000;

function delivery(
  secret: string,
  deliveryId: string,
  event: string,
  subject: string,
  over: Partial<Delivery> = {},
): Delivery {
  const body = JSON.stringify(
    event.startsWith('batch.') ? { event, batch: { id: subject } } : { event, generation: { id: subject } },
  );
  const headers = deliveryHeaders({ deliveryId, event, timestamp: NOW, body, secrets: [secret] });
  return { deliveryId, event, subject, body, signature: headers['x-service-signature']!, receivedAt: NOW, ...over };
}

describe('judgeDeliveries', () => {
  const secret = generateSecret();

  it('finds every expected event, a repeat counted once, each signed', () => {
    const got = [
      delivery(secret, 'whd_1', 'generation.completed', 'gen_a'),
      delivery(secret, 'whd_1', 'generation.completed', 'gen_a'),
      delivery(secret, 'whd_2', 'batch.completed', 'batch_b'),
    ];
    expect(judgeDeliveries(['gen_a generation.completed', 'batch_b batch.completed'], got, secret)).toEqual({
      missing: [],
      repeats: 1,
      unsigned: [],
    });
  });

  it('names what is missing, and a delivery signed with another secret, an altered body or an old timestamp', () => {
    const other = delivery(generateSecret(), 'whd_3', 'generation.failed', 'gen_c');
    const altered = { ...delivery(secret, 'whd_4', 'generation.completed', 'gen_d'), body: '{"event":"x"}' };
    const late = delivery(secret, 'whd_5', 'generation.completed', 'gen_e', { receivedAt: NOW + 301 });
    const judged = judgeDeliveries(
      [
        'gen_c generation.failed',
        'gen_d generation.completed',
        'gen_e generation.completed',
        'gen_f generation.completed',
      ],
      [other, altered, late],
      secret,
    );
    expect(judged.missing).toEqual(['gen_f generation.completed']);
    expect(judged.unsigned.map((d) => d.deliveryId)).toEqual(['whd_3', 'whd_4', 'whd_5']);
  });
});
