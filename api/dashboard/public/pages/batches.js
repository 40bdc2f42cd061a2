// The account's batches (OpenAI's, made through POST /v1/batches or MCP, and Anthropic's Message
// Batches, made through POST /v1/messages/batches), newest first, each with its format: progress,
// counts and credits, followed live while they run; cancel; the output and error files to download.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { Alert, api, formatNumber, isoTitle, Loading, may, useLoad, when } from '../lib.js';

const RUNNING = ['in_progress', 'cancelling', 'validating', 'finalizing'];
const FORMATS = { openai: 'OpenAI', anthropic: 'Anthropic' };

/**
 * Whether a batch has an output (`output`) or error (`errors`) file to download: OpenAI's batches
 * name theirs; a Message Batch has its results once it has ended, split the same way.
 */
function hasFile(b, role) {
  if (b.format !== 'anthropic') return Boolean(role === 'output' ? b.outputFileId : b.errorFileId);
  return b.finishedAt !== null && (role === 'output' ? b.requestCounts.completed : b.requestCounts.failed) > 0;
}

/** Follows the batches still running, one stream each, until they end. */
function useBatchStreams(ids, onBatch) {
  const key = ids.join(',');
  useEffect(() => {
    const sources = ids.map((id) => {
      const source = new EventSource(`/dashboard/api/batches/${id}/events`);
      for (const name of ['progress', 'done']) source.addEventListener(name, (e) => onBatch(JSON.parse(e.data)));
      source.addEventListener('done', () => source.close());
      return source;
    });
    return () => sources.forEach((s) => s.close());
  }, [key]);
}

function Progress({ b }) {
  const { total, completed, failed } = b.requestCounts;
  const ended = completed + failed;
  return html`<div class="batch-progress">
    <progress max=${Math.max(1, total)} value=${ended} aria-label=${`${ended} of ${total} requests ended`}></progress>
    <span class="small"
      >${completed} done, ${failed} failed of ${total}${b.running ? `; ${b.running} running` : ''}</span
    >
  </div>`;
}

export function Batches() {
  const [error, setError] = useState();
  const state = useLoad(() => api('GET', '/dashboard/api/batches?limit=20'));
  const put = (b) => state.set((page) => page && { ...page, data: page.data.map((x) => (x.id === b.id ? b : x)) });
  const running = (state.data?.data ?? []).filter((b) => RUNNING.includes(b.status)).map((b) => b.id);
  useBatchStreams(running, put);
  const cancel = async (b) => {
    try {
      put(await api('POST', `/dashboard/api/batches/${b.id}/cancel`));
    } catch (err) {
      setError(err);
    }
  };
  return html`<h1>Batches</h1>
    <p class="muted">
      Made with <span class="mono">POST /v1/batches</span> (the OpenAI SDK’s <span class="mono">client.batches</span>),
      the MCP tool <span class="mono">generate_batch</span>, or <span class="mono">POST /v1/messages/batches</span> (the
      Anthropic SDK’s <span class="mono">client.messages.batches</span>). The whole price is held when a batch starts;
      each request is charged when it succeeds and released when it fails.
    </p>
    <${Alert} error=${error} />
    <${Loading} state=${state}
      >${(page) =>
        page.data.length === 0
          ? html`<p>No batches yet.</p>`
          : html`<table class="table batches">
              <caption class="visually-hidden">
                Batches, newest first; running ones update live
              </caption>
              <thead>
                <tr>
                  <th scope="col">Batch</th>
                  <th scope="col">Format</th>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Status</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Credits</th>
                  <th scope="col">Created</th>
                  <th scope="col">Files</th>
                  <th scope="col"><span class="visually-hidden">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                ${page.data.map(
                  (b) =>
                    html`<tr key=${b.id} data-batch=${b.id} data-status=${b.status}>
                      <td data-label="Batch" class="mono break">${b.id}</td>
                      <td data-label="Format" data-format=${b.format}>${FORMATS[b.format] ?? b.format}</td>
                      <td data-label="Endpoint" class="mono">${b.endpoint}</td>
                      <td data-label="Status"><span class=${`badge badge-${b.status}`}>${b.status}</span></td>
                      <td data-label="Progress">
                        ${
                          b.errors
                            ? html`<span class="small"
                                >${b.errors.length} problem${b.errors.length === 1 ? '' : 's'}, first:
                                ${b.errors[0].message}</span
                              >`
                            : html`<${Progress} b=${b} />`
                        }
                      </td>
                      <td data-label="Credits">
                        ${formatNumber(b.creditsCharged)} charged
                        <span class="muted small">of ${formatNumber(b.creditsHeld)} held</span>
                      </td>
                      <td data-label="Created"><time datetime=${isoTitle(b.createdAt)}>${when(b.createdAt)}</time></td>
                      <td data-label="Files">
                        ${
                          hasFile(b, 'output')
                            ? html`<a href=${`/dashboard/api/batches/${b.id}/output`} download>Output</a> `
                            : null
                        }${
                          hasFile(b, 'errors')
                            ? html`<a href=${`/dashboard/api/batches/${b.id}/errors`} download>Errors</a>`
                            : null
                        }
                      </td>
                      <td>
                        ${
                          b.status === 'in_progress' && may('playground')
                            ? html`<button
                                type="button"
                                class="danger small"
                                onClick=${() => cancel(b)}
                                aria-label=${`Cancel batch ${b.id}`}
                              >
                                Cancel
                              </button>`
                            : null
                        }
                      </td>
                    </tr>`,
                )}
              </tbody>
            </table>`}<//
    >`;
}
