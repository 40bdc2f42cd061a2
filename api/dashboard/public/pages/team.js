// The account's team: members with their roles; owners and admins invite, change and remove them.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Alert, api, boot, Loading, may, Secret, useLoad, when } from '../lib.js';

const ROLES = ['owner', 'admin', 'developer', 'billing', 'viewer'];
const MEANINGS = {
  owner: 'everything, owners included',
  admin: 'everything but owners',
  developer: 'keys, webhooks, playground',
  billing: 'credits, ledger, customers’ limits',
  viewer: 'reads only',
};
const manages = () => may('team');
// Only an owner makes, changes or removes an owner.
const offered = () => (boot.role === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner'));

function RoleSelect({ name = 'role', value, label, onChange }) {
  return html`<select name=${name} aria-label=${label} onChange=${onChange}>
    ${offered().map((r) => html`<option value=${r} selected=${value === r}>${r} — ${MEANINGS[r]}</option>`)}
  </select>`;
}

export function Team() {
  const state = useLoad(() => api('GET', '/dashboard/api/team'));
  const [error, setError] = useState();
  const [invited, setInvited] = useState();
  const act = async (call) => {
    setError(undefined);
    try {
      state.set(await call());
    } catch (err) {
      setError(err);
      state.reload();
    }
  };
  const invite = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    setError(undefined);
    try {
      const m = await api('POST', '/dashboard/api/team', {
        email: String(form.get('email')),
        role: String(form.get('role')),
      });
      setInvited(m);
      formEl.reset();
      state.reload();
    } catch (err) {
      setError(err);
    }
  };
  const remove = (m) => {
    if (!confirm(`Remove ${m.email}? Their sessions end at once.`)) return;
    act(() => api('DELETE', `/dashboard/api/team/${m.id}`));
  };
  const mayTouch = (m) => manages() && (boot.role === 'owner' || m.role !== 'owner');
  return html`<h1>Team</h1>
    <p class="muted">You are <strong data-testid="my-role">${boot.role}</strong>.</p>
    <${Alert} error=${error} />
    ${
      manages()
        ? html`<section aria-labelledby="invite">
            <h2 id="invite">Invite a member</h2>
            ${
              invited
                ? html`<${Secret}
                    label=${`Set-password link for ${invited.email} (${invited.role})`}
                    value=${invited.setPasswordUrl}
                    note="Hand it to them: it works once, for 24 hours."
                    onDone=${() => setInvited(undefined)}
                  />`
                : null
            }
            <form class="stack" onSubmit=${invite}>
              <label>Email <input name="email" type="email" required maxlength="254" /></label>
              <label>Role <${RoleSelect} value="developer" label="Role" /></label>
              <button type="submit">Invite</button>
            </form>
          </section>`
        : null
    }
    <section aria-labelledby="members">
      <h2 id="members">Members</h2>
      <${Loading} state=${state}
        >${(d) =>
          html`<table class="table">
            <caption class="visually-hidden">
              Members of the account
            </caption>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              ${d.data.map(
                (m) =>
                  html`<tr key=${m.id} data-member=${m.email}>
                    <td data-label="Member">
                      ${m.email} ${m.active ? null : html`<span class="muted small">(invited)</span>`}
                    </td>
                    <td data-label="Role">
                      ${
                        mayTouch(m)
                          ? html`<${RoleSelect}
                              value=${m.role}
                              label=${`Role of ${m.email}`}
                              onChange=${(e) => act(() => api('PATCH', `/dashboard/api/team/${m.id}`, { role: e.currentTarget.value }))}
                            />`
                          : html`<span data-testid="role">${m.role}</span>`
                      }
                    </td>
                    <td data-label="Since">${when(m.createdAt)}</td>
                    <td>
                      ${
                        mayTouch(m)
                          ? html`<button type="button" class="secondary small" onClick=${() => remove(m)}>
                              Remove
                            </button>`
                          : null
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`}<//
      >
    </section>`;
}
