// Webhook endpoints: add, edit, test, rotate the secret, delete; each one's delivery log. Callbacks named on
// jobs: the account's callback secret and their delivery log.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { Alert, api, Loading, may, Secret, useLoad, when } from '../lib.js';

const ALERT_EVENTS = ['balance.low', 'key.budget_reached', 'customer.budget_reached'];
const BATCH_EVENTS = ['batch.completed', 'batch.failed', 'batch.cancelled', 'batch.expired'];
const FORMAT_EVENTS = {
  nested: ['generation.completed', 'generation.failed'],
  flat: ['generation.queued', 'generation.running', 'generation.succeeded', 'generation.failed'],
  openai: [
    ...BATCH_EVENTS,
    'response.completed',
    'response.failed',
    'response.cancelled',
    'response.incomplete',
    'generation.completed',
    'generation.failed',
    'generation.cancelled',
  ],
};
const FORMATS = [
  ['nested', 'generation.completed and .failed, every kind'],
  ['flat', 'every state change of videos and upscales'],
  ['openai', 'OpenAI’s events and shape, for the openai SDKs’ webhooks.unwrap()'],
];
// Opt-in in any format that does not send them anyway: sent only to an endpoint that ticks them.
const optIn = (format) => [...ALERT_EVENTS, ...BATCH_EVENTS].filter((ev) => !FORMAT_EVENTS[format].includes(ev));

// Uncontrolled: the page re-renders when its lists load or reload, and that must not untick what was ticked.
function EventChoices({ format, chosen }) {
  return html`<fieldset>
    <legend>Events <span class="muted small">(none ticked: all of them)</span></legend>
    <div class="checks">
      ${FORMAT_EVENTS[format].map((ev) => html`<label class="check"><input type="checkbox" name="events" value=${ev} defaultChecked=${chosen?.includes(ev) ?? false} /> ${ev}</label>`)}
    </div>
    <div class="checks">
      ${optIn(format).map((ev) => html`<label class="check"><input type="checkbox" name="events" value=${ev} defaultChecked=${chosen?.includes(ev) ?? false} /> ${ev} <span class="muted small">(only when ticked)</span></label>`)}
    </div>
  </fieldset>`;
}

/** A delivery log, newest first: an endpoint's (`path` its deliveries) or the callbacks' (each row names its URL). */
function Deliveries({ path, caption, callbacks = false, onError }) {
  const state = useLoad(() => api('GET', `${path}?limit=20`));
  useEffect(() => {
    // Deliveries happen in the background: look again a few times while the log is open.
    const timer = setInterval(() => state.reload(), 3000);
    return () => clearInterval(timer);
  }, []);
  const redeliver = async (d) => {
    try {
      await api('POST', `${path}/${d.id}/redeliver`);
      state.reload();
    } catch (err) {
      onError(err);
    }
  };
  return html`<${Loading} state=${state}
    >${(page) =>
      page.data.length === 0
        ? html`<p class="muted">No deliveries yet.</p>`
        : html`<table class="table deliveries">
            <caption class="visually-hidden">
              ${caption}
            </caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                ${callbacks ? html`<th scope="col">Job and URL</th>` : null}
                <th scope="col">Status</th>
                <th scope="col">Last answer</th>
                <th scope="col">Attempts</th>
                <th scope="col">Created</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              ${page.data.map((d) => {
                const last = d.attempts[d.attempts.length - 1];
                return html`<tr key=${d.id} data-delivery=${d.id} data-status=${d.status}>
                  <td data-label="Event">${d.event}</td>
                  ${callbacks ? html`<td data-label="Job and URL" class="mono break">${d.generationId ?? d.batchId} → ${d.url}</td>` : null}
                  <td data-label="Status"><span class=${`badge badge-${d.status}`}>${d.status}</span></td>
                  <td data-label="Last answer" data-testid="status-code">
                    ${last ? (last.statusCode ?? last.error ?? '—') : '—'}
                  </td>
                  <td data-label="Attempts">${d.attempts.length}</td>
                  <td data-label="Created">${when(d.createdAt)}</td>
                  <td>
                    ${
                      may('webhooks')
                        ? html`<button
                            type="button"
                            class="secondary small"
                            onClick=${() => redeliver(d)}
                            aria-label=${`Redeliver ${d.event} ${d.id}`}
                          >
                            Redeliver
                          </button>`
                        : null
                    }
                  </td>
                </tr>`;
              })}
            </tbody>
          </table>`}<//
  >`;
}

function Endpoint({ e, onChange, onRemove, onSecret, onError }) {
  const [editing, setEditing] = useState(false);
  const [log, setLog] = useState(false);
  const [logKey, setLogKey] = useState(0);
  const act = async (work) => {
    try {
      await work();
    } catch (err) {
      onError(err);
    }
  };
  const save = (ev) => {
    ev.preventDefault();
    const form = new FormData(ev.currentTarget);
    const events = form.getAll('events').map(String);
    return act(async () => {
      onChange(
        await api('PATCH', `/dashboard/api/webhooks/${e.id}`, {
          url: String(form.get('url')),
          description: String(form.get('description') ?? '') || null,
          enabled: form.get('enabled') === 'on',
          events: events.length ? events : FORMAT_EVENTS[e.format],
        }),
      );
      setEditing(false);
    });
  };
  const test = () =>
    act(async () => {
      await api('POST', `/dashboard/api/webhooks/${e.id}/test`);
      setLog(true);
      setLogKey((k) => k + 1);
    });
  return html`<article class="card endpoint" data-endpoint=${e.id} aria-labelledby=${`ep-${e.id}`}>
    <h3 id=${`ep-${e.id}`} class="mono break">${e.url}</h3>
    <p class="muted small">${e.format} · ${e.events.join(', ')}${e.description ? ` · ${e.description}` : ''}</p>
    <p>
      ${e.enabled ? html`<span class="badge badge-succeeded">enabled</span>` : html`<span class="badge badge-failed">disabled</span> <span class="muted small">${e.disabledReason}</span>`}
      ${e.previousSecretExpiresAt ? html` <span class="muted small">previous secret valid until ${when(e.previousSecretExpiresAt)}</span>` : null}
    </p>
    <div class="actions">
      ${
        may('webhooks')
          ? html`<button
                type="button"
                class="secondary small"
                onClick=${() => setEditing(!editing)}
                aria-expanded=${editing}
              >
                Edit
              </button>
              <button type="button" class="secondary small" onClick=${test}>Send test event</button>
              <button
                type="button"
                class="secondary small"
                onClick=${() => act(async () => onSecret(await api('POST', `/dashboard/api/webhooks/${e.id}/rotate-secret`)))}
              >
                Rotate secret
              </button>`
          : null
      }
      <button type="button" class="secondary small" onClick=${() => setLog(!log)} aria-expanded=${log}>
        Delivery log
      </button>
      ${
        may('webhooks')
          ? html`<button
              type="button"
              class="danger small"
              onClick=${() =>
                confirm(`Delete the endpoint ${e.url} and its delivery log?`) &&
                act(async () => {
                  await api('DELETE', `/dashboard/api/webhooks/${e.id}`);
                  onRemove(e.id);
                })}
            >
              Delete
            </button>`
          : null
      }
    </div>
    ${
      editing
        ? html`<form class="stack edit" onSubmit=${save} aria-label=${`Edit ${e.url}`}>
            <label>URL<input name="url" type="url" required defaultValue=${e.url} /></label>
            <label>Description<input name="description" defaultValue=${e.description ?? ''} maxlength="500" /></label>
            <${EventChoices} format=${e.format} chosen=${e.events} />
            <label class="check"><input type="checkbox" name="enabled" defaultChecked=${e.enabled} /> Enabled</label>
            <div class="actions">
              <button type="submit">Save</button
              ><button type="button" class="secondary" onClick=${() => setEditing(false)}>Cancel</button>
            </div>
          </form>`
        : null
    }
    ${
      log
        ? html`<${Deliveries}
            key=${logKey}
            path=${`/dashboard/api/webhooks/${e.id}/deliveries`}
            caption=${`Deliveries to ${e.url}, newest first`}
            onError=${onError}
          />`
        : null
    }
  </article>`;
}

/** Callback URLs that jobs name themselves: signed with the account's callback secret, logged here. */
function Callbacks({ onSecret, onError }) {
  const state = useLoad(() =>
    api('GET', '/dashboard/api/webhooks/callback-secret').catch((err) =>
      err.status === 404 ? null : Promise.reject(err),
    ),
  );
  const rotate = async () => {
    try {
      const made = await api('POST', '/dashboard/api/webhooks/callback-secret/rotate');
      onSecret(made.secret);
      state.reload();
    } catch (err) {
      onError(err);
    }
  };
  return html`<section aria-labelledby="callbacks">
    <h2 id="callbacks">Callbacks named on jobs</h2>
    <p class="muted">
      A job may name its own callback URL (<code>webhook</code>, <code>callback_url</code> or <code>callbackUrl</code>);
      its events are signed with the account’s callback secret and retried like an endpoint’s.
    </p>
    <${Loading} state=${state}
      >${(s) =>
        html`<p>
          ${
            s
              ? html`Callback secret made
                ${when(s.createdAt)}${s.previousSecretExpiresAt ? html` <span class="muted small">(previous one valid until ${when(s.previousSecretExpiresAt)})</span>` : null}`
              : 'No callback secret yet: jobs cannot name a callback until there is one.'
          }
          ${may('webhooks') ? html` <button type="button" class="secondary small" onClick=${rotate}>${s ? 'Rotate callback secret' : 'Make callback secret'}</button>` : null}
        </p>`}<//
    >
    <${Deliveries}
      path="/dashboard/api/webhooks/callbacks/deliveries"
      caption="Deliveries to callbacks named on jobs, newest first"
      callbacks=${true}
      onError=${onError}
    />
  </section>`;
}

export function Webhooks() {
  const state = useLoad(() => api('GET', '/dashboard/api/webhooks'));
  const [format, setFormat] = useState('nested');
  const [secret, setSecret] = useState();
  const [error, setError] = useState();
  const create = async (e) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const events = form.getAll('events').map(String);
    setError(undefined);
    try {
      const created = await api('POST', '/dashboard/api/webhooks', {
        url: String(form.get('url')),
        format,
        ...(events.length ? { events } : {}),
        ...(form.get('description') ? { description: String(form.get('description')) } : {}),
      });
      setSecret({ label: `Signing secret of ${created.url}`, value: created.secret });
      formEl.reset();
      state.reload();
    } catch (err) {
      setError(err);
    }
  };
  const replace = (e) => state.set((d) => ({ data: d.data.map((x) => (x.id === e.id ? { ...x, ...e } : x)) }));
  return html`<h1>Webhooks</h1>
    <p class="muted">
      Each delivery is signed with the endpoint’s secret (<a href="/docs">how to verify</a>) and retried for about three
      days.
    </p>
    ${secret ? html`<${Secret} label=${secret.label} value=${secret.value} onDone=${() => setSecret(undefined)} />` : null}
    <${Alert} error=${error} />
    ${
      may('webhooks')
        ? html`<section aria-labelledby="new-endpoint">
            <h2 id="new-endpoint">New endpoint</h2>
            <form class="stack" onSubmit=${create}>
              <label>URL<input name="url" type="url" required placeholder="https://example.com/hooks/gensvc" /></label>
              <fieldset>
                <legend>Format</legend>
                <div class="checks">
                  ${FORMATS.map(
                    ([value, label]) =>
                      html`<label class="check"
                        ><input
                          type="radio"
                          name="format"
                          value=${value}
                          checked=${format === value}
                          onChange=${() => setFormat(value)}
                        />
                        ${value}: ${label}</label
                      >`,
                  )}
                </div>
              </fieldset>
              <${EventChoices} key=${format} format=${format} />
              <label
                >Description <span class="muted small">(optional)</span><input name="description" maxlength="500"
              /></label>
              <button type="submit">Add endpoint</button>
            </form>
          </section>`
        : null
    }
    <${Callbacks} onSecret=${(value) => setSecret({ label: 'Callback secret', value })} onError=${setError} />
    <section aria-labelledby="endpoints">
      <h2 id="endpoints">Endpoints</h2>
      <${Loading} state=${state}
        >${(d) =>
          d.data.length === 0
            ? html`<p>No endpoints yet (up to 5).</p>`
            : d.data.map(
                (e) =>
                  html`<${Endpoint}
                    key=${e.id}
                    e=${e}
                    onChange=${replace}
                    onRemove=${(id) => state.set((x) => ({ data: x.data.filter((y) => y.id !== id) }))}
                    onSecret=${(r) => {
                      replace(r);
                      setSecret({ label: `New signing secret of ${r.url}`, value: r.secret });
                    }}
                    onError=${setError}
                  />`,
              )}<//
      >
    </section>`;
}
