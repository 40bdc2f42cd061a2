// A real Mailpit for the alert email tests, built by `npm run mailpit` (.ci/run runs it): SMTP in,
// its HTTP API to read what arrived.
import { freePort } from '../../runtime/process';
import { MAILPIT_VERSION, mailpit } from '../../scripts/mailpit';
import { start, stopped, waitUntil } from './servers';
import type { TestServer } from './servers';

export interface MailpitMessage {
  ID: string;
  MessageID: string;
  From: { Address: string; Name: string };
  To: { Address: string; Name: string }[];
  Subject: string;
}

export interface MailpitServer extends TestServer {
  smtpUrl: string;
  /** Every message received, newest first. */
  messages(): Promise<MailpitMessage[]>;
  /** One message's plain text body. */
  text(id: string): Promise<string>;
}

export async function startMailpit(): Promise<MailpitServer> {
  const binary = await mailpit.find();
  if (!binary)
    throw new Error(
      `Mailpit ${MAILPIT_VERSION} is not built; run \`npm run mailpit\` (go install into ${mailpit.cachedPath()}, once; .ci/run does this) or set MAILPIT_BINARY`,
    );
  const [smtpPort, httpPort] = [await freePort(), await freePort()];
  const s = start(
    'mailpit',
    binary,
    [
      '--smtp',
      `127.0.0.1:${smtpPort}`,
      '--listen',
      `127.0.0.1:${httpPort}`,
      '--disable-version-check',
      '--smtp-auth-accept-any',
      '--smtp-auth-allow-insecure',
    ],
    process.env,
  );
  const api = `http://127.0.0.1:${httpPort}/api/v1`;
  await waitUntil('mailpit', s, async () => (await fetch(`${api}/messages`).catch(() => undefined))?.ok === true);
  return {
    port: smtpPort,
    smtpUrl: `smtp://127.0.0.1:${smtpPort}`,
    async messages() {
      const res = await fetch(`${api}/messages?limit=500`);
      return ((await res.json()) as { messages: MailpitMessage[] }).messages;
    },
    async text(id) {
      const res = await fetch(`${api}/message/${id}`);
      return ((await res.json()) as { Text: string }).Text;
    },
    stop: () => stopped(s),
  };
}
