// Mailpit, a real SMTP server that keeps what it receives and serves it back over an HTTP API:
// the alert email tests send to it with nodemailer and read the messages back. Its module builds
// with `go install`; the build lacks the web UI's assets (made by npm in its repository, not in the
// module: /dist/app.js answers 404), which the tests do not need: SMTP and the HTTP API work.
import { goTool } from './go-tool';

export const MAILPIT_VERSION = 'v1.27.11';
export const mailpit = goTool({
  name: 'mailpit',
  module: 'github.com/axllent/mailpit',
  version: MAILPIT_VERSION,
  binary: 'mailpit',
  envVar: 'MAILPIT_BINARY',
});
