import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Webhook secrets must be kept in a form that can sign (a hash would not do), so they are sealed
 * with AES-256-GCM under a key derived from WEBHOOK_SECRET_KEY. The endpoint id is the associated
 * data: a sealed secret copied onto another endpoint's row does not open. A database dump alone
 * therefore reveals no secret; the key lives in the environment of the API and the workers.
 */
const VERSION = 'v1';

export interface SecretBox {
  seal(plain: string, endpointId: string): string;
  open(sealed: string, endpointId: string): string;
}

export function createSecretBox(keyMaterial: string): SecretBox {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(keyMaterial, 'utf8'), Buffer.alloc(0), 'gensvc webhook secrets v1', 32),
  );
  return {
    seal(plain, endpointId) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(endpointId, 'utf8'));
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64')}`;
    },
    open(sealed, endpointId) {
      const [version, payload] = sealed.split(':');
      if (version !== VERSION || payload === undefined) throw new Error('unknown sealed secret format');
      const raw = Buffer.from(payload, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(endpointId, 'utf8'));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}
