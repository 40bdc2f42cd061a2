// The security probes' pure parts: the switch that closes private networks, what the delivery log keeps, and
// the worker's log lines losing their secrets.
import { describe, expect, it } from 'vitest';
import { excerptOf } from '../../../activities/webhooks/delivery';
import { allowsPrivateNetworks, loadConfig, privateNetworkWarning } from '../../../core/config';
import { redactSecrets } from '../../../core/log-redaction';
import { jsonLogger } from '../../../runtime/json-logger';

describe('the development default, one variable from production', () => {
  it('npm start (development) reaches private networks and says so, naming the switch', () => {
    const dev = loadConfig({});
    expect(allowsPrivateNetworks(dev)).toBe(true);
    expect(privateNetworkWarning(dev)).toMatch(/ALLOW_PRIVATE_NETWORKS=false/);
  });

  it('ALLOW_PRIVATE_NETWORKS=false gives development production’s rule, and no warning', () => {
    const closed = loadConfig({ ALLOW_PRIVATE_NETWORKS: 'false' });
    expect(closed.NODE_ENV).toBe('development');
    expect(allowsPrivateNetworks(closed)).toBe(false);
    expect(privateNetworkWarning(closed)).toBeUndefined();
    const production = loadConfig({
      NODE_ENV: 'production',
      ADMIN_TOKEN: 'a'.repeat(16),
      WEBHOOK_SECRET_KEY: 'b'.repeat(16),
      URL_SIGNING_SECRET: 'c'.repeat(16),
    });
    expect(allowsPrivateNetworks(production)).toBe(false);
    expect(() => loadConfig({ ALLOW_PRIVATE_NETWORKS: 'maybe' })).toThrow(/ALLOW_PRIVATE_NETWORKS/);
  });

  it('the delivery log keeps an answer’s excerpt only from a public address', () => {
    const body = Buffer.from('x'.repeat(2000));
    expect(excerptOf({ body, remoteAddress: '93.184.216.34' })).toHaveLength(1024);
    for (const remoteAddress of [
      '127.0.0.1',
      '::1',
      '10.1.2.3',
      '192.168.0.9',
      '::ffff:127.0.0.1',
      'fd00::1',
      undefined,
    ]) {
      expect(excerptOf({ body, ...(remoteAddress ? { remoteAddress } : {}) }), String(remoteAddress)).toBeNull();
    }
  });
});

describe('secrets in log text', () => {
  it('query values of signature, key and api_key, and bearer tokens, are redacted', () => {
    expect(redactSecrets('/files/gen_1/output.png?expires=123&signature=abcdef')).toBe(
      '/files/gen_1/output.png?expires=123&signature=[redacted]',
    );
    expect(redactSecrets('/api/v1/balance?key=gsk_x&api_key=sk-y&limit=5')).toBe(
      '/api/v1/balance?key=[redacted]&api_key=[redacted]&limit=5',
    );
    expect(redactSecrets('Authorization: Bearer gsk_abc.def')).toBe('Authorization: Bearer [redacted]');
    expect(redactSecrets('/api/v1/generations?monkey=1')).toBe('/api/v1/generations?monkey=1');
  });

  it('the worker’s JSON lines (activities, workflows) are redacted too', () => {
    const lines: string[] = [];
    jsonLogger('INFO', (line) => void lines.push(line)).warn('fetch failed', {
      url: 'https://cdn.example/x.png?X-Amz-Signature=deadbeef&key=k1',
    });
    expect(lines.join('')).not.toMatch(/deadbeef|k1/);
    expect(lines.join('')).toContain('X-Amz-Signature=[redacted]');
  });
});
