/**
 * The ids of live-stream events (SSE `id:`, sent back as `Last-Event-ID`), which say exactly what a
 * client has seen, so that a resumed stream sends what is newer and nothing it had. Ids are unique
 * within a stream and rise with every event.
 *
 * One generation's stream: `1` queued, `2` running, `3` final; while running, `2.<pp><f>`: its
 * progress in percent as two digits and whether its preview was sent (0 or 1), e.g. `2.400`, then
 * `2.401` once the preview went out. Read as decimals they rise, so do the states they name.
 *
 * An account's stream: `<n>` for the status change numbered n (core/db/notify.ts, takeChange), and
 * `<n>-<k>` for the k-th other event sent since it (a record as it is now, progress, a preview).
 */

/** What one generation's stream has sent: the status rank, and while running the progress and whether the preview went out. */
export interface GenerationMark {
  rank: 1 | 2 | 3;
  progress: number;
  preview: boolean;
}

const GENERATION_ID = /^(?:([13])|2(?:\.(\d{2})([01])?)?)$/;

export function parseGenerationEventId(id: string): GenerationMark | undefined {
  const m = GENERATION_ID.exec(id);
  if (!m) return undefined;
  if (m[1]) return { rank: Number(m[1]) as 1 | 3, progress: 0, preview: false };
  return { rank: 2, progress: Number(m[2] ?? 0), preview: m[3] === '1' };
}

export function generationEventId(m: GenerationMark): string {
  if (m.rank !== 2 || (m.progress === 0 && !m.preview)) return String(m.rank);
  return `2.${String(m.progress).padStart(2, '0')}${m.preview ? 1 : 0}`;
}

/** Where an account's stream is: the last change number sent, and the events sent after it. */
export interface AccountMark {
  change: number;
  step: number;
}

const ACCOUNT_ID = /^(\d{1,15})(?:-(\d{1,9}))?$/;

export function parseAccountEventId(id: string): AccountMark | undefined {
  const m = ACCOUNT_ID.exec(id);
  return m ? { change: Number(m[1]), step: Number(m[2] ?? 0) } : undefined;
}

export const accountEventId = (m: AccountMark): string => (m.step === 0 ? String(m.change) : `${m.change}-${m.step}`);
