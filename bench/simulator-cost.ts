import { performance } from 'node:perf_hooks';
import { quoteImage, quoteVideo } from '../core/pricing';
import { createSimulator } from '../core/providers/simulator';
import type { ProviderJob } from '../core/providers/types';
import { round } from './stats';

export interface SimulatorCost {
  /** Wall and CPU ms of one simulated run with `sim:delay=0`: the simulator's own work, which a real provider adapter would not do in-process. */
  image: { wallMs: number; cpuMs: number };
  video: { wallMs: number; cpuMs: number };
  chat: { wallMs: number; cpuMs: number };
}

/**
 * The simulator still renders a real file when told not to wait (a 1024² PNG, a 5 s WebM).
 * Measured here, outside the service, so the bench can say how much of a generation's CPU is
 * the simulator rather than the service.
 */
export async function measureSimulatorCost(runs = 5): Promise<SimulatorCost> {
  const simulator = createSimulator();
  const ctx = { heartbeat: () => undefined, signal: new AbortController().signal };
  const image = quoteImage({ model: 'image-flux' });
  const video = quoteVideo({ model: 'kling' });
  const jobs: Record<keyof SimulatorCost, ProviderJob> = {
    image: { generationId: 'gen_calibration', kind: 'image', model: image.model, prompt: 'calibration sim:delay=0', params: { ...image.params } },
    video: { generationId: 'gen_calibration', kind: 'video', model: video.model, prompt: 'calibration sim:delay=0', params: { ...video.params } },
    chat: { generationId: 'gen_calibration', kind: 'chat', model: 'chat-haiku', prompt: 'calibration sim:delay=0', params: {} },
  };
  const out = {} as SimulatorCost;
  for (const kind of ['image', 'video', 'chat'] as const) {
    await simulator.run(jobs[kind], ctx); // warm-up: first use of sharp loads libvips
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < runs; i++) await simulator.run({ ...jobs[kind], generationId: `gen_calibration${i}` }, ctx);
    const cpu = process.cpuUsage(cpu0);
    out[kind] = { wallMs: round((performance.now() - t0) / runs), cpuMs: round((cpu.user + cpu.system) / 1000 / runs) };
  }
  return out;
}
