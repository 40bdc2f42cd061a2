// The bare reference `npm run bench` measures the service against (bench/reference-process.ts
// runs it): a workflow with the same Temporal shape as a generation today and nothing else — no
// XState machine, no pricing, no files. Deadline timer, (video) slot activity, markRunning as a
// local activity, the provider as an activity, settle as a local activity, and the status search
// attribute upserted on the way, exactly as workflows/generation/workflow.ts does for an admitted job.
import {
  CancellationScope,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { GenerationStatus } from '../core/search-attributes';

export interface BareInput {
  id: string;
  kind: 'image' | 'video';
  deadlineMs: number;
  /**
   * Until when (epoch ms) the provider pretends to work: 0 for the latency scenarios; for the
   * in-flight one a common moment, as the service's `sim:until`, however late a run starts.
   */
  providerUntil: number;
}

export interface BareActivities {
  /** One UPDATE, as a local activity (markRunning). */
  bareMarkRunning(id: string): Promise<void>;
  /** One UPDATE, as a local activity (settle). */
  bareSettle(id: string): Promise<void>;
  /** A no-op that returns at once (the slot is always free). */
  bareWaitForSlot(id: string): Promise<void>;
  /** The provider: returns at `until` (epoch ms; at once if past). */
  bareProvider(id: string, until: number): Promise<{ outputKey: string }>;
}

const ledger = proxyLocalActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });
const slots = proxyActivities<BareActivities>({ startToCloseTimeout: '1 hour', heartbeatTimeout: '10 seconds' });
const provider = proxyActivities<BareActivities>({ startToCloseTimeout: '10 minutes', heartbeatTimeout: '10 seconds' });

/**
 * Temporal's floor: a workflow that does nothing but complete in its first task, its search
 * attributes given at start (bench/reference-process.ts starts it). What any durable record of a
 * request costs the server and the SDK, whatever runs around it.
 */
export async function floor(outcome: string): Promise<string> {
  return outcome;
}

/**
 * The floor of a job that waits (a video): a timer started in the first task, and the workflow
 * completed in the second, when it fires. What a durable wait costs at the least.
 */
export async function floorTimer(outcome: string): Promise<string> {
  await sleep(1);
  return outcome;
}

export async function bareGeneration(input: BareInput): Promise<string> {
  const deadline = new CancellationScope();
  deadline.run(() => sleep(input.deadlineMs)).catch(() => undefined);
  if (input.kind === 'video') await slots.bareWaitForSlot(input.id);
  await ledger.bareMarkRunning(input.id);
  upsertSearchAttributes([{ key: GenerationStatus, value: 'running' }]);
  const output = await provider.bareProvider(input.id, input.providerUntil);
  await ledger.bareSettle(input.id);
  upsertSearchAttributes([{ key: GenerationStatus, value: 'succeeded' }]);
  deadline.cancel();
  return output.outputKey;
}
