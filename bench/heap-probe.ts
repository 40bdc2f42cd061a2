// `tsx bench/heap-probe.ts PID [--every=2000] [--for=60000] [--snapshot=DIR]`: what a running Node
// process (the service a bench started, say) holds in memory, without restarting it. SIGUSR1 opens
// its inspector (127.0.0.1:9229); over it the probe reads, for the main thread and every worker
// thread (the SDK's workflow threads are one V8 isolate each), process.memoryUsage() and V8's heap
// spaces, and splits the process's PSS (/proc/PID/smaps) into V8's heaps, the Temporal core's
// library, other files and the rest of the anonymous memory (malloc: the Rust core, Node's
// buffers). With --snapshot it writes one heap snapshot per isolate and prints the largest
// constructors by self size.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';

const INSPECTOR = 'http://127.0.0.1:9229';
const MB = 2 ** 20;
const mb = (b: number) => Math.round((b / MB) * 10) / 10;

type Reply = { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown> };

/** One CDP connection; worker threads are reached through NodeWorker's sessions on it. */
async function connect(pid: number) {
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let i = 0; i < 50 && !url; i++) {
    await new Promise((r) => setTimeout(r, 100));
    url = await fetch(`${INSPECTOR}/json/list`)
      .then((r) => r.json() as Promise<{ webSocketDebuggerUrl: string }[]>)
      .then((l) => l[0]?.webSocketDebuggerUrl)
      .catch(() => undefined);
  }
  if (!url) throw new Error(`no inspector at ${INSPECTOR} after SIGUSR1 to ${pid}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 1;
  const waiting = new Map<number, (r: Reply) => void>();
  const listeners: ((m: Reply) => void)[] = [];
  const dispatch = (m: Reply) => {
    if (m.id !== undefined && waiting.has(m.id)) {
      waiting.get(m.id)!(m);
      waiting.delete(m.id);
    } else listeners.forEach((l) => l(m));
  };
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data)) as Reply;
    if (m.method === 'NodeWorker.receivedMessageFromWorker')
      dispatch(JSON.parse((m.params as { message: string }).message) as Reply);
    else dispatch(m);
  };
  const workers: string[] = [];
  listeners.push((m) => {
    if (m.method === 'NodeWorker.attachedToWorker') workers.push((m.params as { sessionId: string }).sessionId);
  });
  /** Sends a command to the main thread (session undefined) or to a worker thread's session. */
  const send = (method: string, params: object = {}, session?: string): Promise<Reply> => {
    const id = next++;
    const msg = JSON.stringify({ id, method, params });
    const done = new Promise<Reply>((resolve) => waiting.set(id, resolve));
    ws.send(
      session
        ? JSON.stringify({
            id: next++,
            method: 'NodeWorker.sendMessageToWorker',
            params: { sessionId: session, message: msg },
          })
        : msg,
    );
    return done;
  };
  const seen = await send('Runtime.evaluate', { expression: 'process.pid', returnByValue: true });
  const answered = (seen.result as { result: { value: number } }).result.value;
  if (answered !== pid) {
    ws.close();
    throw new Error(`${INSPECTOR} is process ${answered}'s inspector, not ${pid}'s: another probe left it open`);
  }
  await send('NodeWorker.enable', { waitForDebuggerOnStart: false });
  await new Promise((r) => setTimeout(r, 300));
  /** Closes the inspector the probe opened, so that the next probe can open another process's on the same port. */
  const close = async () => {
    await Promise.race([
      send('Runtime.evaluate', { expression: "process.getBuiltinModule('inspector').close()" }),
      new Promise((r) => setTimeout(r, 1000)),
    ]);
    ws.close();
  };
  return { send, workers, listeners, close };
}

const READ = `JSON.stringify((() => {
  const v8 = process.getBuiltinModule('v8');
  const wt = process.getBuiltinModule('worker_threads');
  const h = v8.getHeapStatistics();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size]));
  return { main: wt.isMainThread, name: wt.threadId, mem: process.memoryUsage(), heapLimit: h.heap_size_limit,
    committed: h.total_heap_size, contexts: h.number_of_native_contexts, detached: h.number_of_detached_contexts, spaces };
})())`;

interface Isolate {
  main: boolean;
  name: number;
  mem: NodeJS.MemoryUsage;
  committed: number;
  contexts: number;
  detached: number;
  spaces: Record<string, number>;
}

async function readIsolate(send: (m: string, p: object, s?: string) => Promise<Reply>, session?: string) {
  const r = await send('Runtime.evaluate', { expression: READ, returnByValue: true }, session);
  return JSON.parse((r.result as { result: { value: string } }).result.value) as Isolate;
}

/** PSS by kind of mapping, from /proc/PID/smaps. */
async function pssByMapping(pid: number): Promise<Record<string, number>> {
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const out: Record<string, number> = {};
  let kind = 'anon';
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const path = head[1] ?? '';
      kind =
        path.includes('temporal') && path.endsWith('.node')
          ? 'temporal core library'
          : path === '' || path === '[heap]' || path.startsWith('[anon')
            ? 'anonymous'
            : path.startsWith('[')
              ? 'other'
              : path.endsWith('/node')
                ? 'node binary'
                : 'other files';
      continue;
    }
    const pss = /^Pss:\s+(\d+) kB/.exec(line);
    if (pss) out[kind] = (out[kind] ?? 0) + Number(pss[1]) * 1024;
  }
  return out;
}

/** Self size by constructor in a heap snapshot, largest first. */
function summarise(snapshot: string, top = 15): string[] {
  const s = JSON.parse(snapshot) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const f = s.snapshot.meta.node_fields;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((n) => f.indexOf(n));
  const types = s.snapshot.meta.node_types[0];
  const by = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < s.nodes.length; i += f.length) {
    const type = types[s.nodes[i + iType!]!]!;
    const key = type === 'object' || type === 'closure' ? `${type} ${s.strings[s.nodes[i + iName!]!]}` : `(${type})`;
    const e = by.get(key) ?? { size: 0, count: 0 };
    e.size += s.nodes[i + iSize!]!;
    e.count++;
    by.set(key, e);
  }
  return [...by]
    .sort((a, b) => b[1].size - a[1].size)
    .slice(0, top)
    .map(([k, v]) => `${mb(v.size).toFixed(1).padStart(7)} MB ${String(v.count).padStart(8)}  ${k}`);
}

async function snapshot(c: Probe, session: string | undefined, file: string) {
  const chunks: string[] = [];
  const listen = (m: Reply) => {
    if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push((m.params as { chunk: string }).chunk);
  };
  c.listeners.push(listen);
  await c.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false }, session);
  c.listeners.splice(c.listeners.indexOf(listen), 1);
  const text = chunks.join('');
  await writeFile(file, text);
  return summarise(text);
}

type Probe = Awaited<ReturnType<typeof connect>>;

/** One sample: the process's PSS by mapping beside every isolate's heap spaces. */
async function sample(c: Probe, pid: number) {
  const isolates = [await readIsolate(c.send)];
  for (const w of c.workers) isolates.push(await readIsolate(c.send, w));
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const pss = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1]) * 1024;
  const byMap = await pssByMapping(pid);
  const heaps = isolates.reduce((a, i) => a + i.committed, 0);
  const main = isolates[0]!.mem;
  return {
    at: new Date().toISOString().slice(11, 19),
    pssMb: mb(pss),
    rssMb: mb(main.rss),
    v8HeapsCommittedMb: mb(heaps),
    // Committed but untouched V8 pages count in `heaps`, not in PSS: this can go below zero.
    anonymousLessV8Mb: mb((byMap.anonymous ?? 0) - heaps),
    externalMb: mb(main.external),
    arrayBuffersMb: mb(main.arrayBuffers),
    byMappingMb: Object.fromEntries(Object.entries(byMap).map(([k, v]) => [k, mb(v)])),
    isolates: isolates.map((i) => ({
      thread: i.main ? 'main' : `worker ${i.name}`,
      usedMb: mb(i.mem.heapUsed),
      committedMb: mb(i.committed),
      newSpaceMb: mb(i.spaces.new_space ?? 0),
      oldSpaceMb: mb(i.spaces.old_space ?? 0),
      codeMb: mb(i.spaces.code_space ?? 0),
      largeMb: mb(i.spaces.large_object_space ?? 0),
      contexts: i.contexts,
    })),
  };
}

/** A heap snapshot of every isolate into `dir`, each followed by its largest constructors. */
async function snapshotAll(c: Probe, pid: number, dir: string) {
  await mkdir(dir, { recursive: true });
  const sessions: (string | undefined)[] = [undefined, ...c.workers];
  for (const [i, s] of sessions.entries()) {
    const file = join(dir, `${pid}-${i === 0 ? 'main' : `worker-${i}`}.heapsnapshot`);
    console.log(`\n${file}:\n${(await snapshot(c, s, file)).join('\n')}`);
  }
}

async function main() {
  const pid = Number(process.argv[2]);
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const every = Number(arg('every') ?? 2000);
  const until = Date.now() + Number(arg('for') ?? 0);
  const c = await connect(pid);
  try {
    do {
      console.log(JSON.stringify(await sample(c, pid)));
      if (Date.now() < until) await new Promise((r) => setTimeout(r, every));
    } while (Date.now() < until);
    const dir = arg('snapshot');
    if (dir) await snapshotAll(c, pid, dir);
  } finally {
    await c.close();
  }
}

await main();
