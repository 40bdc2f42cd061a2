import { setTimeout as sleep } from 'node:timers/promises';
import nodemailer from 'nodemailer';
import type pg from 'pg';
import { claimDueEmails, expandAlertEmails, recordEmailAttempt } from '../core/db/alert-emails';
import { inTransaction } from '../core/db/pool';
import { claimUnmailedSignups, markSignupMailed } from '../core/db/signups';
import { alertMail } from '../core/mail/alert-mail';
import { signupMail } from '../core/mail/signup-mail';

export interface MailRelayOptions {
  pool: pg.Pool;
  smtpUrl: string;
  from: string;
  /** Where the emails point (PUBLIC_BASE_URL + /dashboard): alerts' link, sign-up verification links. */
  dashboardUrl: string;
  pollMs?: number;
  batchSize?: number;
  /** Waits after the 1st, 2nd … failed attempt; the email ends failed after the last. */
  retryScheduleMs?: readonly number[];
  onError?: (err: unknown) => void;
}

export interface MailRelay {
  stop(): Promise<void>;
}

const DEFAULT_RETRIES = [30_000, 120_000, 600_000, 1_800_000, 3_600_000, 3_600_000];

/**
 * Sends alert emails from the worker side, never inside a money transaction: it expands new
 * alerts into one row per recipient, then sends each due row while holding its lock and marks it
 * sent in the same transaction (migration 019), so every alert reaches every recipient at least
 * once and two relays never send one row twice. SMTP failures are retried on a schedule.
 */
export function startMailRelay(opts: MailRelayOptions): MailRelay {
  const transport = nodemailer.createTransport(opts.smtpUrl);
  const pollMs = opts.pollMs ?? 5_000;
  const batchSize = opts.batchSize ?? 20;
  const retries = opts.retryScheduleMs ?? DEFAULT_RETRIES;
  const onError = opts.onError ?? (() => undefined);
  let stopped = false;
  const stopping = new AbortController();

  /** Sends one batch; true when there may be more. */
  const sendBatch = (): Promise<boolean> =>
    inTransaction(opts.pool, async (tx) => {
      const due = await claimDueEmails(tx, batchSize);
      for (const email of due) {
        const mail = alertMail(email.alert, email.recipient, opts.dashboardUrl);
        try {
          await transport.sendMail({
            from: opts.from,
            to: email.recipient,
            subject: mail.subject,
            text: mail.text,
            messageId: mail.messageId,
          });
          await recordEmailAttempt(tx, email.alert.id, email.recipient, { sent: true });
        } catch (err) {
          const retryInMs = retries[email.attempts] ?? null;
          await recordEmailAttempt(tx, email.alert.id, email.recipient, {
            sent: false,
            error: err instanceof Error ? err.message : String(err),
            retryInMs,
          });
        }
      }
      return due.length === batchSize;
    });

  /**
   * Sends one batch of sign-up emails, each marked sent (its token forgotten) in the transaction
   * that holds its lock; one that fails stays for the next turn. True when there may be more.
   */
  const sendSignups = (): Promise<boolean> =>
    inTransaction(opts.pool, async (tx) => {
      const due = await claimUnmailedSignups(tx, batchSize);
      for (const s of due) {
        const mail = signupMail(s, opts.dashboardUrl);
        try {
          await transport.sendMail({ from: opts.from, to: s.email, subject: mail.subject, text: mail.text });
          await markSignupMailed(tx, s.tokenHash);
        } catch (err) {
          onError(err);
          return false;
        }
      }
      return due.length === batchSize;
    });

  const turn = async (): Promise<void> => {
    while (!stopped && (await sendSignups()));
    while (!stopped && (await inTransaction(opts.pool, (tx) => expandAlertEmails(tx, batchSize))) > 0);
    while (!stopped && (await sendBatch()));
  };

  const loop = async (): Promise<void> => {
    while (!stopped) {
      try {
        await turn();
      } catch (err) {
        onError(err);
      }
      if (stopped) break;
      await sleep(pollMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  };
  const running = loop();

  return {
    async stop() {
      stopped = true;
      stopping.abort();
      await running;
      transport.close();
    },
  };
}
