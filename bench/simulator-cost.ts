import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { quoteImage, quoteVideo } from '../core/catalogue/pricing';
import { createSimulator } from '../core/providers/simulator';
import type { ProviderJob } from '../core/providers/types';
import { createLocalStore } from '../core/storage/output-store';
import { round } from './stats';

export interface SimulatorCost {
  /**
   * Wall and CPU ms of one simulated run with `sim:delay=0` and the store's put of its file: the
   * task itself (render and upload), which a real provider adapter would mostly do elsewhere.
   */
  image: { wallMs: number; cpuMs: number };
  video: { wallMs: number; cpuMs: number };
  chat: { wallMs: number; cpuMs: number };
}

/**
 * The simulator still renders a real file when told not to wait (a 1024² PNG, a 5 s WebM), and
 * the provider activity stores it. Measured here, outside the service and Temporal (the local
 * store, as the bench's service uses), so the bench can say how much of a generation's CPU is the
 * task rather than the service. process.cpuUsage() counts every thread: the render threads too.
 */
export async function measureSimulatorCost(runs = 5): Promise<SimulatorCost> {
  const simulator = createSimulator();
  const dir = await mkdtemp(join(tmpdir(), 'bench-simulator-'));
  const store = createLocalStore({
    rootDir: dir,
    publicBaseUrl: 'http://bench.invalid',
    signingSecret: 'bench-simulator-cost',
  });
  const ctx = { heartbeat: () => undefined, signal: new AbortController().signal };
  const image = quoteImage({ model: 'image-flux' });
  const video = quoteVideo({ model: 'kling' });
  const jobs: Record<keyof SimulatorCost, ProviderJob> = {
    image: {
      generationId: 'gen_calibration',
      kind: 'image',
      model: image.model,
      prompt: 'calibration sim:delay=0',
      params: { ...image.params },
      internal: {},
    },
    video: {
      generationId: 'gen_calibration',
      kind: 'video',
      model: video.model,
      prompt: 'calibration sim:delay=0',
      params: { ...video.params },
      internal: {},
    },
    chat: {
      generationId: 'gen_calibration',
      kind: 'chat',
      model: 'chat-haiku',
      prompt: 'calibration sim:delay=0',
      params: {},
      internal: {},
    },
  };
  const task = async (job: ProviderJob) => {
    const result = await simulator.run(job, ctx);
    if (result.file)
      await store.put(`${job.generationId}/output.${result.file.extension}`, result.file.data, result.file.contentType);
  };
  const out = {} as SimulatorCost;
  try {
    for (const kind of ['image', 'video', 'chat'] as const) {
      await task(jobs[kind]); // warm-up: first use of sharp loads libvips, the first paint starts the render thread
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < runs; i++) await task({ ...jobs[kind], generationId: `gen_calibration${i}` });
      const cpu = process.cpuUsage(cpu0);
      out[kind] = {
        wallMs: round((performance.now() - t0) / runs),
        cpuMs: round((cpu.user + cpu.system) / 1000 / runs),
      };
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}
