// Batches under the faults: a chat batch made early runs through the worker kills and the
// PostgreSQL and Temporal restarts; an image batch is cancelled part-way. Made by a careful client:
// a create whose answer was lost is looked up by its tag before it is sent again (a batch has no
// Idempotency-Key). Once everything has settled, every batch must have ended with nothing held,
// each line run once at most, and its output and error files must hold what its counts say.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { batchCounts } from '../core/db/batches';
import type { Check } from './ledger-checks';

export interface FaultBatch {
  id: string;
  key: string;
  endpoint: string;
  lines: number;
  cancelled: boolean;
}

const RETRY_FOR_MS = 240_000;

interface Answer {
  status: number | 'dropped';
  body: unknown;
}

async function call(
  baseUrl: string,
  key: string,
  method: string,
  path: string,
  body: string | FormData | undefined,
  signal: AbortSignal,
  contentType?: string,
  raw = false,
): Promise<Answer> {
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(contentType ? { 'content-type': contentType } : {}) },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(60_000)]),
    });
    const text = await res.text();
    if (raw) return { status: res.status, body: text };
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: json };
  } catch (err) {
    if (signal.aborted) throw err;
    return { status: 'dropped', body: undefined };
  }
}

/** Sends until the answer is neither a 5xx, a 429 nor a dropped connection (`lookup` may find that it was done). */
async function carefully<T>(
  send: () => Promise<Answer>,
  ok: (a: Answer) => T | undefined,
  signal: AbortSignal,
  lookup?: () => Promise<T | undefined>,
): Promise<T> {
  const until = Date.now() + RETRY_FOR_MS;
  for (let attempt = 1; ; attempt++) {
    const a = await send();
    const done = ok(a);
    if (done !== undefined) return done;
    const retryable = a.status === 'dropped' || a.status === 429 || a.status >= 500;
    if (!retryable || Date.now() > until)
      throw new Error(`batch call answered ${a.status}: ${JSON.stringify(a.body).slice(0, 300)}`);
    await sleep(Math.min(10_000, 500 * 2 ** attempt), undefined, { signal });
    const found = await lookup?.().catch(() => undefined);
    if (found !== undefined) return found;
  }
}

/** Uploads `lines` and makes a batch of them, tagged so that a lost answer is found again. */
async function makeBatch(
  baseUrl: string,
  key: string,
  endpoint: string,
  lines: Record<string, unknown>[],
  signal: AbortSignal,
): Promise<string> {
  const tag = randomBytes(6).toString('hex');
  const text = lines
    .map((body, i) => JSON.stringify({ custom_id: `l${i + 1}`, method: 'POST', url: endpoint, body }))
    .join('\n');
  const fileId = await carefully(
    () => {
      const form = new FormData();
      form.append('purpose', 'batch');
      form.append('file', new Blob([text], { type: 'application/jsonl' }), 'faults.jsonl');
      return call(baseUrl, key, 'POST', '/v1/files', form, signal);
    },
    (a) => (a.status === 200 ? (a.body as { id: string }).id : undefined),
    signal,
  );
  const find = async () => {
    const list = await call(baseUrl, key, 'GET', '/v1/batches?limit=100', undefined, signal);
    const data =
      list.status === 200 ? (list.body as { data: { id: string; metadata: { tag?: string } | null }[] }).data : [];
    return data.find((b) => b.metadata?.tag === tag)?.id;
  };
  return carefully(
    () =>
      call(
        baseUrl,
        key,
        'POST',
        '/v1/batches',
        JSON.stringify({ input_file_id: fileId, endpoint, completion_window: '24h', metadata: { tag } }),
        signal,
        'application/json',
      ),
    (a) => (a.status === 200 ? (a.body as { id: string }).id : undefined),
    signal,
    find,
  );
}

/**
 * The run's batches: a chat batch early (its lines some quick, some slow, some failing), an image
 * batch a little later, cancelled a while after. Resolves with them once made (and cancelled).
 */
export async function runBatches(
  baseUrl: string,
  keys: { chat: string; images: string },
  spanMs: number,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<FaultBatch[]> {
  const made: FaultBatch[] = [];
  await sleep(Math.min(5_000, spanMs / 10), undefined, { signal });
  const chatLines = Array.from({ length: 80 }, (_, i) => ({
    model: 'claude-haiku',
    max_tokens: 40,
    messages: [
      {
        role: 'user',
        content: `[faults batch] line ${i + 1}${i % 10 === 7 ? ' sim:fail' : ''} sim:tokens=${5 + (i % 20)} sim:delay=${[0, 800, 2500][i % 3]}`,
      },
    ],
  }));
  const chat = await makeBatch(baseUrl, keys.chat, '/v1/chat/completions', chatLines, signal);
  made.push({ id: chat, key: keys.chat, endpoint: '/v1/chat/completions', lines: chatLines.length, cancelled: false });
  log(`batch ${chat}: ${chatLines.length} chat lines`);

  await sleep(Math.min(15_000, spanMs / 5), undefined, { signal });
  const imageLines = Array.from({ length: 40 }, (_, i) => ({
    model: 'flux',
    prompt: `[faults batch] image ${i + 1} sim:delay=20000`,
    ...(i % 8 === 0 ? { n: 2 } : {}),
  }));
  const images = await makeBatch(baseUrl, keys.images, '/v1/images/generations', imageLines, signal);
  made.push({
    id: images,
    key: keys.images,
    endpoint: '/v1/images/generations',
    lines: imageLines.length,
    cancelled: true,
  });
  log(`batch ${images}: ${imageLines.length} image lines, to be cancelled part-way`);
  // Its lines take 20 s each: cancelled while they run. On a quiet machine with a cancel retried
  // through the faults it may still have ended first (409 batch_finished), which the checks accept.
  await sleep(Math.min(10_000, spanMs / 8), undefined, { signal });
  const cancel = await carefully(
    () => call(baseUrl, keys.images, 'POST', `/v1/batches/${images}/cancel`, undefined, signal),
    (a) =>
      a.status === 200
        ? 'cancelled'
        : a.status === 409 && (a.body as { error?: { type?: string } }).error?.type === 'batch_finished'
          ? 'had already ended'
          : undefined,
    signal,
  );
  log(`batch ${images}: ${cancel}`);
  return made;
}

/** Batches still running (or cancelling): the settle phase waits for them too. */
export async function liveBatches(db: pg.Pool): Promise<number> {
  const r = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM batches WHERE status IN ('in_progress', 'cancelling', 'validating', 'finalizing')",
  );
  return r.rows[0]!.n;
}

/**
 * What the service answers of the run's batches once they ended: each ended as it should have
 * (completed, or cancelled), its counts add up to its lines, and its output and error files hold a
 * line per completed and per failed request, in the file's order.
 */
export async function batchAnswerCheck(db: pg.Pool, baseUrl: string, batches: FaultBatch[]): Promise<Check> {
  const problems: string[] = [];
  const counts = await batchCounts(
    db,
    batches.map((b) => b.id),
  );
  for (const b of batches) {
    const signal = AbortSignal.timeout(60_000);
    const got = await call(baseUrl, b.key, 'GET', `/v1/batches/${b.id}`, undefined, signal);
    const batch = got.body as {
      status: string;
      request_counts: { total: number; completed: number; failed: number };
      // Absent until there is one, as OpenAI's document has them (never null).
      output_file_id?: string;
      error_file_id?: string;
    };
    const want = b.cancelled ? ['cancelled', 'completed'] : ['completed'];
    if (got.status !== 200 || !want.includes(batch.status)) {
      problems.push(`${b.id}: ${got.status} ${batch?.status}`);
      continue;
    }
    const rc = batch.request_counts;
    const c = counts.get(b.id);
    if (rc.total !== b.lines || rc.completed + rc.failed !== rc.total || c?.completed !== rc.completed)
      problems.push(`${b.id}: counts ${JSON.stringify(rc)} for ${b.lines} lines`);
    for (const [file, n] of [
      [batch.output_file_id, rc.completed],
      [batch.error_file_id, rc.failed],
    ] as const) {
      if (n === 0) {
        if (file !== undefined) problems.push(`${b.id}: a file for no lines`);
        continue;
      }
      const content = file
        ? await call(baseUrl, b.key, 'GET', `/v1/files/${file}/content`, undefined, signal, undefined, true)
        : undefined;
      const lines = typeof content?.body === 'string' ? content.body.trim().split('\n') : [];
      if (content?.status !== 200 || lines.length !== n)
        problems.push(`${b.id}: file ${file} has ${lines.length} lines, ${n} expected`);
    }
  }
  return {
    name: 'every batch ended as asked, its counts and files agree with its lines',
    ok: problems.length === 0,
    detail:
      problems.length === 0
        ? batches.map((b) => `${b.id.slice(0, 12)}… ${b.lines} lines${b.cancelled ? ', cancelled' : ''}`).join('; ')
        : problems.slice(0, 5).join('; '),
  };
}
