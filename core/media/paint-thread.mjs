// A render thread (core/media/paint-pool.ts starts them): paints frames off the event loop that
// serves HTTP and workflow tasks, and hands the pixels back without copying them.
import { parentPort } from 'node:worker_threads';
import { paintScene } from './paint.mjs';

parentPort.on('message', ({ id, scene, width, height, phases }) => {
  try {
    const frames = phases.map((phase) => paintScene(scene, width, height, phase));
    parentPort.postMessage(
      { id, frames },
      frames.map((f) => f.buffer),
    );
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
