import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { paintScene } from './paint.mjs';
import type { Scene } from './paint.mjs';

/**
 * Render threads for the simulator's painting, which is synchronous JavaScript (~3–5 ms per 1024²
 * image, ~0.2 ms per video frame): on the main thread it would stall the event loop that serves
 * HTTP, workflow activations and local activities in the same process (`npm start` runs them all
 * in one). sharp's encoding already runs off the loop, on libuv's threads.
 *
 * One thread less than the cores (at least one): the main thread keeps a core for the service.
 * Threads are started on first use and never keep the process alive. Frames too small to be
 * worth a message are painted inline; if no thread can be started, everything is.
 */
const THREADS = Math.max(1, Math.min(4, availableParallelism() - 1));
const INLINE_BELOW_BYTES = 64 * 1024;

interface Job {
  resolve(frames: Buffer[]): void;
  reject(err: Error): void;
}

interface Thread {
  worker: Worker;
  jobs: Map<number, Job>;
}

let threads: Thread[] | undefined;
let broken = false;
let nextId = 0;

function start(): Thread[] {
  const list: Thread[] = [];
  for (let i = 0; i < THREADS; i++) {
    const worker = new Worker(new URL('./paint-thread.mjs', import.meta.url));
    worker.unref();
    const thread: Thread = { worker, jobs: new Map() };
    worker.on('message', (m: { id: number; frames?: ArrayBuffer[] | Uint8Array[]; error?: string }) => {
      const job = thread.jobs.get(m.id);
      if (!job) return;
      thread.jobs.delete(m.id);
      if (m.error !== undefined || !m.frames) job.reject(new Error(`render thread: ${m.error ?? 'no frames'}`));
      else
        job.resolve(
          m.frames.map((f) =>
            f instanceof Uint8Array ? Buffer.from(f.buffer, f.byteOffset, f.byteLength) : Buffer.from(f),
          ),
        );
    });
    // A thread that dies fails its jobs (the provider activity is retried) and is not used again.
    const fail = (err: Error) => {
      for (const job of thread.jobs.values()) job.reject(err);
      thread.jobs.clear();
      threads = threads?.filter((t) => t !== thread);
      if (threads?.length === 0) broken = true;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`render thread exited with code ${code}`)));
    list.push(thread);
  }
  return list;
}

/** Paints one frame per phase of the scene, off the event loop when the frames are large enough. */
export async function paintFrames(scene: Scene, width: number, height: number, phases: number[]): Promise<Buffer[]> {
  if (broken || width * height * 3 < INLINE_BELOW_BYTES) return phases.map((p) => paintScene(scene, width, height, p));
  threads ??= start();
  const thread = threads.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
  const id = nextId++;
  return new Promise<Buffer[]>((resolve, reject) => {
    thread.jobs.set(id, { resolve, reject });
    thread.worker.postMessage({ id, scene, width, height, phases });
  });
}

/** One frame (an image). */
export async function paintFrame(scene: Scene, width: number, height: number): Promise<Buffer> {
  const [frame] = await paintFrames(scene, width, height, [0]);
  if (!frame) throw new Error('the render thread returned no frame');
  return frame;
}
