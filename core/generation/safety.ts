import { ContentPolicyError } from '../errors';

/**
 * The safety guard for image and video prompts, applied before pricing or running (spec, group C).
 * A deliberately small, explicit list of refused subjects, matched as whole words so that ordinary
 * prompts are never caught by a fragment; a real deployment would put a moderation model here.
 */
const REFUSED_TERMS = [
  'csam',
  'child sexual',
  'sexual minor',
  'nude child',
  'beheading',
  'gore',
  'snuff',
  'terrorist propaganda',
  'bomb making',
];

const REFUSED = new RegExp(`\\b(${REFUSED_TERMS.map((t) => t.replace(/\s+/g, '\\s+')).join('|')})\\b`, 'i');

export function isPromptRefused(prompt: string): boolean {
  return REFUSED.test(prompt);
}

export function assertPromptAllowed(prompt: string): void {
  if (isPromptRefused(prompt)) throw new ContentPolicyError();
}
