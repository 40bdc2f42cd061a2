/** The email a sign-up request sends: the verification link, or a note to an address that already has an account. */
export function signupMail(
  s: { token: string; registered: boolean },
  dashboardUrl: string,
): { subject: string; text: string } {
  if (s.registered) {
    return {
      subject: 'You already have an account',
      text:
        `Someone (you?) asked to sign up with this address, which already has an account.\n` +
        `Log in at ${dashboardUrl}/login. If it was not you, there is nothing to do.\n`,
    };
  }
  return {
    subject: 'Confirm your email to create your account',
    text:
      `Follow this link within 24 hours to confirm your address and create your account:\n\n` +
      `${dashboardUrl}/verify#token=${s.token}\n\nIf you did not ask for an account, ignore this email.\n`,
  };
}
