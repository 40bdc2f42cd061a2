// API keys: create one (its secret shown once), revoke one, set a key's spending budget.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { Alert, api, credits, Loading, may, PERIODS, periodWords, Secret, useLoad, when } from '../lib.js';

// A key's spending budget: what it spent this period, and a small form to set or remove it.
function KeyBudget({ k, onChange, onError }) {
  const [open, setOpen] = useState(false);
  const b = k.budget;
  const save = async (e) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    try {
      const budget = await api('PUT', `/dashboard/api/keys/${k.id}/budget`, {
        maxCredits: Number(form.get('maxCredits')),
        period: String(form.get('period')),
      });
      onChange(budget);
      setOpen(false);
    } catch (err) {
      onError(err);
    }
  };
  const remove = async () => {
    try {
      await api('DELETE', `/dashboard/api/keys/${k.id}/budget`);
      onChange(null);
      setOpen(false);
    } catch (err) {
      onError(err);
    }
  };
  return html`<div class="stack small">
    ${
      b
        ? html`<span data-testid="budget"
              >${credits(b.spentCredits)} of ${credits(b.maxCredits)} ${periodWords(b.period)}</span
            >
            ${b.resetsAt ? html`<span class="muted">resets ${when(b.resetsAt)}</span>` : null}`
        : html`<span class="muted">no limit</span>`
    }
    ${
      !may('keys')
        ? null
        : open
          ? html`<form class="stack" onSubmit=${save} aria-label=${`Budget of ${k.hint}`}>
              <label
                >Max credits
                <input name="maxCredits" type="number" min="0" step="any" required defaultValue=${b?.maxCredits ?? ''}
              /></label>
              <label
                >Period
                <select name="period">
                  ${PERIODS.map(([v, label]) => html`<option value=${v} selected=${(b?.period ?? 'month') === v}>${label}</option>`)}
                </select></label
              >
              <div class="actions">
                <button type="submit" class="small">Save budget</button>
                ${b ? html`<button type="button" class="secondary small" onClick=${remove}>Remove budget</button>` : null}
                <button type="button" class="secondary small" onClick=${() => setOpen(false)}>Close</button>
              </div>
            </form>`
          : html`<button
              type="button"
              class="secondary small"
              onClick=${() => setOpen(true)}
              aria-label=${`Set the budget of ${k.hint}`}
            >
              ${b ? 'Change' : 'Set budget'}
            </button>`
    }
  </div>`;
}

export function Keys({ words }) {
  const state = useLoad(() => api('GET', '/dashboard/api/keys'));
  const [created, setCreated] = useState();
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const create = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const scopes = form.getAll('scopes').map(String);
    const models = String(form.get('models') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    setError(undefined);
    if (scopes.length === 0) return setError(new Error('Choose at least one scope.'));
    setBusy(true);
    try {
      const key = await api('POST', '/dashboard/api/keys', { scopes, ...(models.length ? { models } : {}) });
      setCreated(key);
      formEl.reset();
      state.reload();
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const revoke = async (k) => {
    if (!confirm(`Revoke ${k.hint}? Requests made with it are refused from now on.`)) return;
    try {
      await api('DELETE', `/dashboard/api/keys/${k.id}`);
      state.set((d) => ({ data: d.data.filter((x) => x.id !== k.id) }));
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>API keys</h1>
    ${
      may('keys')
        ? html`<section aria-labelledby="new-key">
            <h2 id="new-key">New key</h2>
            ${created ? html`<${Secret} label="Your new API key" value=${created.key} onDone=${() => setCreated(undefined)} />` : null}
            <${Alert} error=${error} />
            <form class="stack" onSubmit=${create}>
              <fieldset>
                <legend>Scopes</legend>
                <div class="checks">
                  ${words.scopes.map((k) => html`<label class="check"><input type="checkbox" name="scopes" value=${k} checked=${k !== 'upscale' && k !== 'webhooks'} /> ${k}</label>`)}
                </div>
              </fieldset>
              <label
                >Models <span class="muted small">(optional)</span>
                <input name="models" placeholder="e.g. flux, kling" aria-describedby="models-hint"
              /></label>
              <p id="models-hint" class="muted small">
                A comma-separated allow-list of model ids; empty lets the key use every model.
              </p>
              <button type="submit" disabled=${busy}>Create key</button>
            </form>
          </section>`
        : null
    }
    <section aria-labelledby="keys">
      <h2 id="keys">Keys</h2>
      <${Loading} state=${state}
        >${(d) =>
          d.data.length === 0
            ? html`<p>No keys yet.</p>`
            : html`<table class="table">
                <caption class="visually-hidden">
                  Live API keys
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Models</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Budget</th>
                    <th scope="col"><span class="visually-hidden">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  ${d.data.map(
                    (k) =>
                      html`<tr key=${k.id} data-key=${k.id}>
                        <td data-label="Key" class="mono">${k.hint}</td>
                        <td data-label="Scopes">${k.scopes.join(', ')}</td>
                        <td data-label="Models">
                          ${k.models ? k.models.join(', ') : html`<span class="muted">all</span>`}
                        </td>
                        <td data-label="Created">${when(k.createdAt)}</td>
                        <td data-label="Last used">
                          ${k.lastUsedAt ? when(k.lastUsedAt) : html`<span class="muted">never</span>`}
                        </td>
                        <td data-label="Budget">
                          <${KeyBudget}
                            k=${k}
                            onError=${setError}
                            onChange=${(budget) => state.set((d) => ({ data: d.data.map((x) => (x.id === k.id ? { ...x, budget } : x)) }))}
                          />
                        </td>
                        <td>
                          ${
                            may('keys')
                              ? html`<button
                                  type="button"
                                  class="danger small"
                                  onClick=${() => revoke(k)}
                                  aria-label=${`Revoke ${k.hint}`}
                                >
                                  Revoke
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
