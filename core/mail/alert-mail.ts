import { createHash } from 'node:crypto';
import type { AlertRow } from '../db/alerts';
import { mcToCredits } from '../money';

export interface AlertMail {
  subject: string;
  text: string;
  /** The same for every attempt of one alert to one recipient, so a mail client drops a resend. */
  messageId: string;
}

const PERIOD_WORDS: Record<string, string> = {
  day: 'today (UTC)',
  week: 'this week (UTC)',
  month: 'this month (UTC)',
  none: 'in total',
};

/** The email announcing an alert: plain text, what happened and where to act. */
export function alertMail(a: AlertRow, recipient: string, dashboardUrl: string | undefined): AlertMail {
  const where = dashboardUrl ? `\n\nOpen the dashboard: ${dashboardUrl}\n` : '\n';
  const credits = (mc: number) => `${mcToCredits(mc)} credits`;
  const messageId = `<${a.id}.${createHash('sha256').update(recipient).digest('hex').slice(0, 16)}@alerts.gensvc>`;
  if (a.event === 'balance.low') {
    return {
      subject: `Low balance: ${credits(a.amountMc)} left`,
      text:
        `Your account ${a.accountId} has ${credits(a.amountMc)} available, below the ${credits(a.limitMc)} you asked to be told about.\n` +
        `Generations are refused once the credits run out; buy credits or ask your operator for more.${where}` +
        `\nAlert ${a.id}, ${a.createdAt.toISOString()}\n`,
      messageId,
    };
  }
  if (a.event === 'customer.budget_reached') {
    return {
      subject: `Customer budget reached: ${a.customerId ?? 'a customer'}`,
      text:
        `Your customer ${a.customerId ?? ''} (account ${a.accountId}) has spent ${credits(a.amountMc)} of its ${credits(a.limitMc)} budget ${PERIOD_WORDS[a.period ?? 'none'] ?? ''}.\n` +
        `Its requests are refused with 402 customer_budget_exceeded until the period starts again or its budget is raised.${where}` +
        `\nAlert ${a.id}, ${a.createdAt.toISOString()}\n`,
      messageId,
    };
  }
  return {
    subject: `Key budget reached: ${a.keyId ?? 'a key'}`,
    text:
      `The API key ${a.keyId ?? ''} of account ${a.accountId} has spent ${credits(a.amountMc)} of its ${credits(a.limitMc)} budget ${PERIOD_WORDS[a.period ?? 'none'] ?? ''}.\n` +
      `Its requests are refused with 402 budget_exceeded until the period starts again or the budget is raised.${where}` +
      `\nAlert ${a.id}, ${a.createdAt.toISOString()}\n`,
    messageId,
  };
}
