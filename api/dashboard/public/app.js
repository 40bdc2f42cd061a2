// The dashboard's entry point: the frame (skip link, navigation, log out) around the page the
// server named in the boot data, or the login and set-password pages.
import { html, render } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert, api, boot, Loading, may, useLoad } from './lib.js';
import { PAGES } from './pages.js';

// Each page shows to the roles whose permissions its main work needs (the API decides again on every call).
const NAV = [
  { page: 'overview', href: '/dashboard', label: 'Overview' },
  { page: 'generations', href: '/dashboard/generations', label: 'Generations' },
  { page: 'batches', href: '/dashboard/batches', label: 'Batches' },
  { page: 'keys', href: '/dashboard/keys', label: 'API keys' },
  { page: 'usage', href: '/dashboard/usage', label: 'Usage' },
  { page: 'customers', href: '/dashboard/customers', label: 'Customers' },
  { page: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
  ...(may('playground') ? [{ page: 'playground', href: '/dashboard/playground', label: 'Playground' }] : []),
  // Only when the service sells credits (Stripe configured).
  ...(boot.billing && may('billing') ? [{ page: 'billing', href: '/dashboard/billing', label: 'Billing' }] : []),
  { page: 'team', href: '/dashboard/team', label: 'Team' },
  ...(may('audit') ? [{ page: 'audit', href: '/dashboard/audit', label: 'Audit log' }] : []),
];

function Frame({ children }) {
  const [error, setError] = useState();
  const logout = async () => {
    try {
      await api('POST', '/dashboard/api/logout');
      location.assign('/dashboard/login');
    } catch (err) {
      setError(err);
    }
  };
  return html` <a class="skip" href="#main">Skip to content</a>
    <header class="top">
      <div class="brand"><a href="/dashboard">Generation service</a></div>
      <nav aria-label="Dashboard">
        <ul>
          ${NAV.map((n) => html`<li><a href=${n.href} aria-current=${boot.page === n.page ? 'page' : undefined}>${n.label}</a></li>`)}
        </ul>
      </nav>
      <div class="who">
        <span class="muted" title="Logged in as">${boot.email}</span>
        <span class="badge" data-testid="role" title="Your role">${boot.role}</span>
        <button type="button" class="secondary" onClick=${logout}>Log out</button>
      </div>
    </header>
    <main id="main" tabindex="-1">
      <${Alert} error=${error} />
      ${children}
    </main>`;
}

/** The password typed twice; undefined (the difference shown) when the two differ. Clears a previous error. */
function confirmedPassword(form, setError) {
  if (form.get('password') !== form.get('confirm')) {
    setError(new Error('The two passwords differ.'));
    return undefined;
  }
  setError(undefined);
  return String(form.get('password'));
}

function Login() {
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const params = new URLSearchParams(location.search);
  const submit = async (e) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', '/dashboard/api/login', {
        email: String(form.get('email')),
        password: String(form.get('password')),
      });
      location.assign('/dashboard');
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return html`<main id="main" class="narrow">
    <h1>Log in</h1>
    <p class="muted">Generation service dashboard</p>
    ${params.get('password') === 'set' ? html`<${Alert} kind="notice">Your password is set. Log in with it.<//>` : null}
    ${params.get('verified') === '1' ? html`<${Alert} kind="notice">Your email is confirmed and your account is ready. Log in.<//>` : null}
    <${Alert} error=${error} />
    <form onSubmit=${submit} class="stack">
      <label
        >Email<input
          name="email"
          type="email"
          autocomplete="username"
          required
          defaultValue=${params.get('email') ?? ''}
      /></label>
      <label>Password<input name="password" type="password" autocomplete="current-password" required /></label>
      <button type="submit" disabled=${busy}>${busy ? 'Logging in…' : 'Log in'}</button>
    </form>
    <p class="muted small">No password yet? Use the link your operator gave you.</p>
    ${boot.signup ? html`<p class="small">No account? <a href="/dashboard/signup">Sign up</a>.</p>` : null}
  </main>`;
}

// Self-service sign-up (SIGNUP=open): the answer is the same whether or not the address has an account.
function Signup() {
  const [error, setError] = useState();
  const [sent, setSent] = useState();
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const password = confirmedPassword(form, setError);
    if (password === undefined) return;
    setBusy(true);
    try {
      setSent(await api('POST', '/dashboard/api/signup', { email: String(form.get('email')), password }));
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  return html`<main id="main" class="narrow">
    <h1>Sign up</h1>
    <p class="muted">A free account with starting credits; you confirm your email first.</p>
    <${Alert} error=${error} />
    ${
      sent
        ? html`<${Alert} kind="notice">${sent.message}<//>`
        : html`<form onSubmit=${submit} class="stack">
            <label>Email<input name="email" type="email" autocomplete="username" required maxlength="254" /></label>
            <label
              >Password<input
                name="password"
                type="password"
                autocomplete="new-password"
                minlength="10"
                maxlength="200"
                required
                aria-describedby="pw-hint"
            /></label>
            <p id="pw-hint" class="muted small">10 characters or more.</p>
            <label
              >The same again<input
                name="confirm"
                type="password"
                autocomplete="new-password"
                minlength="10"
                maxlength="200"
                required
            /></label>
            <button type="submit" disabled=${busy}>${busy ? 'Sending…' : 'Sign up'}</button>
          </form>`
    }
    <p class="muted small">Already have an account? <a href="/dashboard/login">Log in</a>.</p>
  </main>`;
}

// The emailed link: its token (in the fragment, never sent in a URL) creates the account once.
function Verify() {
  const token = useRef(new URLSearchParams(location.hash.slice(1)).get('token') ?? '');
  const [error, setError] = useState();
  useEffect(() => {
    history.replaceState(null, '', location.pathname);
    if (!token.current) return setError(new Error('This page needs the link from your email.'));
    api('POST', '/dashboard/api/signup/verify', { token: token.current }).then(
      ({ email }) => location.assign(`/dashboard/login?verified=1&email=${encodeURIComponent(email)}`),
      setError,
    );
  }, []);
  return html`<main id="main" class="narrow">
    <h1>Confirm your email</h1>
    ${error ? html`<${Alert} error=${error} />` : html`<p class="muted" role="status">Creating your account…</p>`}
  </main>`;
}

function SetPassword() {
  // The token travels in the fragment (never sent to a server); it is read once and wiped from the address bar.
  const token = useRef(new URLSearchParams(location.hash.slice(1)).get('token') ?? '');
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  useEffect(() => history.replaceState(null, '', location.pathname), []);
  const submit = async (e) => {
    e.preventDefault();
    const password = confirmedPassword(new FormData(e.currentTarget), setError);
    if (password === undefined) return;
    setBusy(true);
    try {
      const { email } = await api('POST', '/dashboard/api/set-password', { token: token.current, password });
      location.assign(`/dashboard/login?password=set&email=${encodeURIComponent(email)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  if (!token.current) {
    return html`<main id="main" class="narrow">
      <h1>Set your password</h1>
      <${Alert} error=${new Error('This page needs the link your operator gave you.')} />
    </main>`;
  }
  return html`<main id="main" class="narrow">
    <h1>Set your password</h1>
    <${Alert} error=${error} />
    <form onSubmit=${submit} class="stack">
      <label
        >New password<input
          name="password"
          type="password"
          autocomplete="new-password"
          minlength="10"
          maxlength="200"
          required
          aria-describedby="pw-hint"
      /></label>
      <p id="pw-hint" class="muted small">10 characters or more.</p>
      <label
        >The same again<input
          name="confirm"
          type="password"
          autocomplete="new-password"
          minlength="10"
          maxlength="200"
          required
      /></label>
      <button type="submit" disabled=${busy}>${busy ? 'Saving…' : 'Set password'}</button>
    </form>
  </main>`;
}

/** A logged-in page, once the service's words (kinds, statuses) are loaded: the pages list them. */
function Signed() {
  const words = useLoad(() => api('GET', '/dashboard/api/vocabulary'));
  const Page = PAGES[boot.page] ?? PAGES.overview;
  return html`<${Frame}><${Loading} state=${words}>${(w) => html`<${Page} words=${w} />`}<//><//>`;
}

function App() {
  if (boot.page === 'login') return html`<${Login} />`;
  if (boot.page === 'set-password') return html`<${SetPassword} />`;
  if (boot.page === 'signup') return html`<${Signup} />`;
  if (boot.page === 'verify') return html`<${Verify} />`;
  return html`<${Signed} />`;
}

render(html`<${App} />`, document.getElementById('app'));
