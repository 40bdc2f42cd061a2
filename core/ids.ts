import { randomBytes } from 'node:crypto';

const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * Time-ordered ids (48-bit millisecond timestamp + 80 random bits, Crockford base32), so ids sort
 * by creation and make a natural cursor for listings. The prefix names the resource.
 */
type IdPrefix = 'gen' | 'acct' | 'key' | 'wh' | 'whd' | 'task' | 'usr' | 'alrt' | 'aud' | 'batch' | 'file';

function timePart(now: number): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = BASE32[t % 32]! + time;
    t = Math.floor(t / 32);
  }
  return time;
}

/** The smallest id of that time: every id made at or after `time` sorts at or above it. */
export function idFloorAt(prefix: IdPrefix, time: number): string {
  return `${prefix}_${timePart(time)}${'0'.repeat(16)}`;
}

export function newId(prefix: IdPrefix, now = Date.now()): string {
  const time = timePart(now);
  const random = randomBytes(16);
  let rand = '';
  for (let i = 0; i < 16; i++) rand += BASE32[random[i]! % 32]!;
  return `${prefix}_${time}${rand}`;
}

export const GENERATION_ID_PATTERN = /^gen_[0-9a-z]{26}$/;
/** A webhook endpoint. */
export const WEBHOOK_ID_PATTERN = /^wh_[0-9a-z]{26}$/;
/** One event for one endpoint: the X-Service-Delivery and webhook-id, the same on every retry. */
export const DELIVERY_ID_PATTERN = /^whd_[0-9a-z]{26}$/;
export const TASK_ID_PATTERN = /^task_[0-9a-z]{26}$/;
/** An entry of an account's audit log. */
export const AUDIT_ID_PATTERN = /^aud_[0-9a-z]{26}$/;
export const USER_ID_PATTERN = /^usr_[0-9a-z]{26}$/;
/** A batch (group B's Batch API, also shown by group A and the dashboard). */
export const BATCH_ID_PATTERN = /^batch_[0-9a-z]{26}$/;
/** A file uploaded for a batch, or a batch's output or error file. */
export const FILE_ID_PATTERN = /^file_[0-9a-z]{26}$/;
